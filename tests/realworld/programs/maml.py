"""MAML on sine regression: an inner loop with torch.autograd.grad(create_graph=True) on fast weights,
an outer loop that backpropagates through it (second-order MAML)."""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, x, params=None):
        if params is None:
            return self.net(x)
        h = F.relu(F.linear(x, params[0], params[1]))
        h = F.relu(F.linear(h, params[2], params[3]))
        return F.linear(h, params[4], params[5])


def sample_task(generator):
    amplitude = 0.1 + 4.9 * torch.rand(1, generator=generator).item()
    phase = math.pi * torch.rand(1, generator=generator).item()

    def draw(n):
        x = (torch.rand(n, 1, generator=generator) - 0.5) * 10
        return x, amplitude * torch.sin(x + phase)

    return draw


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    generator = torch.Generator().manual_seed(0)
    model = Regressor()
    meta_opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    inner_lr = 0.01
    for step in range(4):
        meta_opt.zero_grad()
        meta_loss = 0.0
        for _ in range(3):
            draw = sample_task(generator)
            x_support, y_support = draw(5)
            x_query, y_query = draw(5)
            fast_weights = list(model.parameters())
            for _ in range(2):
                inner_loss = F.mse_loss(model(x_support, fast_weights), y_support)
                grads = torch.autograd.grad(inner_loss, fast_weights, create_graph=True)
                fast_weights = [w - inner_lr * g for w, g in zip(fast_weights, grads)]
            meta_loss = meta_loss + F.mse_loss(model(x_query, fast_weights), y_query)
        meta_loss = meta_loss / 3
        meta_loss.backward()
        meta_opt.step()
        print(f"step {step} meta loss {meta_loss.item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
