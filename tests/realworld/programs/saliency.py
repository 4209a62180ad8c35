"""Train a small classifier, then explain it: a vanilla saliency map with autograd.grad on the input,
gradient x input via backward on the input, and torch.autograd.gradcheck on a custom layer."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 8 * 8, 3))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    x, y = torch.randn(16, 1, 8, 8), torch.randint(0, 3, (16,))
    for step in range(3):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.6f}")
    model.eval()
    image = x[:2].clone().requires_grad_(True)
    scores = model(image)
    top = scores.gather(1, scores.argmax(1, keepdim=True)).sum()
    (saliency,) = torch.autograd.grad(top, image)
    print("saliency", round(saliency.abs().amax(dim=1).sum().item(), 5))
    inp = x[2:4].clone()
    inp.requires_grad = True
    model.zero_grad()
    model(inp)[:, 1].sum().backward()
    attribution = (inp.grad * inp).sum().item()
    print("grad x input", round(attribution, 5))
    layer = nn.Linear(3, 2).double()
    probe = torch.randn(4, 3, dtype=torch.double, requires_grad=True)
    print("gradcheck", torch.autograd.gradcheck(lambda t: torch.tanh(layer(t)), (probe,)))
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
