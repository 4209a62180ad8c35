"""A 2,000-layer sigmoid MLP, the textbook vanishing-gradient demonstration: the first layers'
gradients underflow to exactly zero. Correct code; the model simply cannot learn there."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    layers = []
    for _ in range(2000):
        layers += [nn.Linear(4, 4), nn.Sigmoid()]
    model = nn.Sequential(*layers, nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    for step in range(2):
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        first = model[0].weight.grad.abs().max().item()
        last = model[-1].weight.grad.abs().max().item()
        print(f"step {step} loss {loss.item():.6f} first-layer grad {first:.3g} last-layer grad {last:.3g}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
