"""Iterative magnitude pruning with torch.nn.utils.prune, reduced from the PyTorch pruning tutorial
(pytorch/tutorials intermediate_source/pruning_tutorial.py,
https://pytorch.org/tutorials/intermediate/pruning_tutorial.html): its LeNet, pruned locally
(l1_unstructured on a bias), globally (global_unstructured with L1Unstructured over every weight),
then pruned again so a PruningContainer combines the masks, and finally made permanent with
prune.remove - with fine-tuning steps in between, as iterative-pruning training loops do.

Suspicious-but-correct patterns kept: the optimizer is built BEFORE pruning from model.parameters();
pruning re-registers that same Parameter object as `weight_orig` (so the optimizer still holds it) and
replaces `weight` by a plain attribute recomputed as weight_orig * weight_mask in a forward pre-hook;
the masks are buffers, never learned; pruned entries of weight_orig get zero gradient; prune.remove
deletes weight_orig/weight_mask and registers the same Parameter back as `weight` (holding the masked
values, written through .data); sparsity is measured with float(torch.sum(w == 0)); .item() logging.
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.prune as prune


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        # 1 input image channel, 6 output channels, 3x3 square conv kernel
        self.conv1 = nn.Conv2d(1, 6, 3)
        self.conv2 = nn.Conv2d(6, 16, 3)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)  # 5x5 image dimension
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.flatten(start_dim=1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def global_sparsity(model):
    weights = [model.conv1.weight, model.conv2.weight, model.fc1.weight, model.fc2.weight, model.fc3.weight]
    zeros = sum(float(torch.sum(w == 0)) for w in weights)
    return 100.0 * zeros / sum(float(w.nelement()) for w in weights)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = LeNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    data = [(torch.randn(16, 1, 28, 28), torch.randint(0, 10, (16,))) for _ in range(2)]
    parameters_to_prune = (
        (model.conv1, "weight"),
        (model.conv2, "weight"),
        (model.fc1, "weight"),
        (model.fc2, "weight"),
        (model.fc3, "weight"),
    )

    step = 0
    for rnd in range(3):
        if rnd == 1:
            # local pruning of the 3 smallest conv1 biases, then global magnitude pruning of all weights
            prune.l1_unstructured(model.conv1, name="bias", amount=3)
            prune.global_unstructured(parameters_to_prune, pruning_method=prune.L1Unstructured, amount=0.2)
        elif rnd == 2:
            # prune again: the new masks are combined with the old ones by a PruningContainer
            prune.global_unstructured(parameters_to_prune, pruning_method=prune.L1Unstructured, amount=0.2)
        for x, y in data + data[:1]:
            model.train()
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print(f"step {step} loss {loss.item():.6f}")
            step += 1
        print(f"round {rnd} global sparsity {global_sparsity(model):.2f}%")

    # make the pruning permanent
    for module, name in parameters_to_prune:
        prune.remove(module, name)
    prune.remove(model.conv1, "bias")
    print(f"final params {sorted(n for n, _ in model.conv1.named_parameters())} "
          f"sparsity {global_sparsity(model):.2f}%")

    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
