"""Constrained training by the method of multipliers: the model minimises loss + lambda * constraint with its
optimizer, and the multiplier, an nn.Parameter no optimizer holds, is raised along its own gradient by hand
(gradient ascent on the dual) and kept non-negative."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    multiplier = nn.Parameter(torch.tensor(0.5))
    budget, dual_lr = 0.2, 0.5
    x, y = torch.randn(64, 8), torch.randn(64, 1)
    for step in range(6):
        out = model(x)
        constraint = out.pow(2).mean() - budget
        loss = F.mse_loss(out, y) + multiplier * constraint
        optimizer.zero_grad()
        multiplier.grad = None
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            multiplier += dual_lr * multiplier.grad
            multiplier.clamp_(min=0.0)
        print(f"step {step} loss {loss.item():.6f} constraint {constraint.item():.6f} multiplier {multiplier.item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict(), "multiplier": multiplier.detach()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
