"""Hooks as people use them: forward hooks that store activations for a feature-matching loss and
for logging, a full backward hook, and tensor.register_hook to clip gradients as they flow."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 2))
    activations = {}

    def save_activation(name):
        def hook(module, inputs, output):
            activations[name] = output
        return hook

    grad_norms = []
    model[1].register_forward_hook(save_activation("relu1"))
    model[3].register_forward_hook(save_activation("relu2"))
    model[2].register_full_backward_hook(lambda m, gin, gout: grad_norms.append(gout[0].norm().item()))
    for p in model.parameters():
        p.register_hook(lambda grad: grad.clamp(-0.5, 0.5))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    x, y = torch.randn(32, 8), torch.randint(0, 2, (32,))
    for step in range(4):
        optimizer.zero_grad()
        logits = model(x)
        sparsity = activations["relu1"].abs().mean() + activations["relu2"].abs().mean()
        loss = F.cross_entropy(logits, y) + 1e-3 * sparsity
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.6f} act {activations['relu2'].detach().mean().item():.5f} "
              f"grad {grad_norms[-1]:.5f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
