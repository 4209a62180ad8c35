"""Madry-style PGD adversarial training: each attack step re-makes the perturbed input as a new leaf
(x_adv = x_adv.detach() + alpha * grad.sign(), then requires_grad_()), takes its gradient with
torch.autograd.grad with the model in eval mode, and the model trains on the final adversarial batch."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


def pgd_attack(model, x, y, eps=0.1, alpha=0.03, steps=3):
    x_adv = x.detach() + torch.empty_like(x).uniform_(-eps, eps)
    x_adv = torch.clamp(x_adv, 0.0, 1.0)
    for _ in range(steps):
        x_adv.requires_grad_()
        loss = F.cross_entropy(model(x_adv), y)
        grad = torch.autograd.grad(loss, [x_adv])[0]
        x_adv = x_adv.detach() + alpha * torch.sign(grad.detach())
        x_adv = torch.min(torch.max(x_adv, x - eps), x + eps)
        x_adv = torch.clamp(x_adv, 0.0, 1.0)
    return x_adv.detach()


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Conv2d(1, 6, 3), nn.ReLU(), nn.Flatten(), nn.Linear(6 * 10 * 10, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for step in range(3):
        x, y = torch.rand(8, 1, 12, 12), torch.randint(0, 10, (8,))
        model.eval()
        x_adv = pgd_attack(model, x, y)
        model.train()
        loss = F.cross_entropy(model(x_adv), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} adversarial loss {loss.item():.6f} perturbation {(x_adv - x).abs().max().item():.4f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
