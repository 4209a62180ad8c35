"""Stochastic Weight Averaging in the shape of the example in PyTorch's own docs
("Weight Averaging (SWA and EMA)", https://pytorch.org/docs/stable/optim.html#weight-averaging-swa-and-ema,
torch/optim/swa_utils.py docstring): CosineAnnealingLR until swa_start, then SWALR, with
swa_model.update_parameters(model) after each late epoch and torch.optim.swa_utils.update_bn(loader,
swa_model) at the end, before predicting with the averaged model.

Suspicious-but-correct patterns kept: AveragedModel deep-copies the model, so swa_model has its own
Parameters (requires_grad=True) that are never in any optimizer and never get a gradient - they are
written in place under no_grad by update_parameters (a copy_ the first time, a running mean after);
two LR schedulers drive one optimizer and the SWALR one takes over mid-run; update_bn resets the BN
running stats of swa_model and refills them with forward passes whose outputs are discarded;
the final predictions come from swa_model under torch.no_grad(); losses logged with .item().
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.swa_utils import SWALR, AveragedModel, update_bn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 32)
        self.bn1 = nn.BatchNorm1d(32)
        self.fc2 = nn.Linear(32, 32)
        self.bn2 = nn.BatchNorm1d(32)
        self.head = nn.Linear(32, 3)

    def forward(self, x):
        x = F.relu(self.bn1(self.fc1(x)))
        x = F.relu(self.bn2(self.fc2(x)))
        return self.head(x)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    # a tiny "DataLoader": a list of (input, target) batches
    w_true = torch.randn(10, 3)
    loader = []
    for _ in range(2):
        x = torch.randn(16, 10)
        loader.append((x, (x @ w_true).argmax(dim=1)))

    model = Net()
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    swa_model = AveragedModel(model)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=5)
    swa_start = 2
    swa_scheduler = SWALR(optimizer, swa_lr=0.05, anneal_epochs=2, anneal_strategy="cos")

    step = 0
    for epoch in range(5):
        model.train()
        for input, target in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(input), target)
            loss.backward()
            optimizer.step()
            print(f"step {step} loss {loss.item():.6f}")
            step += 1
        if epoch > swa_start:
            swa_model.update_parameters(model)
            swa_scheduler.step()
        else:
            scheduler.step()

    # Update bn statistics for the swa_model at the end
    update_bn(loader, swa_model)
    swa_model.eval()
    with torch.no_grad():
        test_input = torch.randn(8, 10)
        preds = swa_model(test_input)
    print(f"swa models averaged {int(swa_model.n_averaged.item())} pred mean {preds.mean().item():.6f}")

    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict(), "swa_model": swa_model.state_dict()},
                   os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
