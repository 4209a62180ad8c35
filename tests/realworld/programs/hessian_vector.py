"""Hessian-vector products: double backward with autograd.grad(create_graph=True), and
torch.autograd.functional.hvp; used for a power iteration on the top Hessian eigenvalue mid-training."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(32, 4), torch.randn(32, 1)
    params = [p for p in model.parameters() if p.requires_grad]
    for step in range(3):
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        grads = torch.autograd.grad(loss, params, create_graph=True)
        v = [torch.randn_like(p) for p in params]
        for _ in range(3):
            norm = torch.sqrt(sum((vi * vi).sum() for vi in v))
            v = [vi / norm for vi in v]
            Hv = torch.autograd.grad(grads, params, grad_outputs=v, retain_graph=True)
            eig = sum((hvi * vi).sum() for hvi, vi in zip(Hv, v)).item()
            v = [hvi.detach() for hvi in Hv]
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.6f} top eigenvalue {eig:.5f}")
    w = torch.randn(4, requires_grad=True)

    def f(w):
        return (torch.tanh(x @ w) - y.squeeze(1)).pow(2).mean()

    _, hvp = torch.autograd.functional.hvp(f, w, torch.ones(4))
    print("hvp", [round(v, 5) for v in hvp.tolist()])
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
