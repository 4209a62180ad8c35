"""Madry-style adversarial training (PGD) on a perturbation ``delta``: each attack step differentiates the loss with
torch.autograd.grad and remakes ``delta`` as a leaf that requires grad at its end, so the last one never needs a
gradient, and the adversarial batch is handed back detached (the ecosystem's pgd_adversarial.py makes its leaf at
the top of each step instead); the model trains on it with ordinary backward and step."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


def pgd(model, x, y, eps=0.1, alpha=0.02, steps=4):
    delta = torch.empty_like(x).uniform_(-eps, eps).requires_grad_()
    for _ in range(steps):
        loss = F.cross_entropy(model(x + delta), y)
        grad, = torch.autograd.grad(loss, delta)
        delta = (delta + alpha * grad.sign()).clamp(-eps, eps).detach().requires_grad_()
    return (x + delta).detach()


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x, y = torch.randn(64, 8), torch.randint(0, 4, (64,))
    for step in range(5):
        model.eval()
        x_adv = pgd(model, x, y)
        model.train()
        loss = F.cross_entropy(model(x_adv), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} adversarial loss {loss.item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
