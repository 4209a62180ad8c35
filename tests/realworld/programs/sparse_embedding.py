"""Matrix factorisation with sparse embedding gradients: nn.Embedding(sparse=True) updated by
SparseAdam, the dense biases and MLP by Adam (two optimizers over disjoint parameters)."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class Recommender(nn.Module):
    def __init__(self, users=30, items=40, dim=8):
        super().__init__()
        self.user = nn.Embedding(users, dim, sparse=True)
        self.item = nn.Embedding(items, dim, sparse=True)
        self.bias = nn.Parameter(torch.zeros(1))
        self.mlp = nn.Sequential(nn.Linear(2 * dim, 8), nn.ReLU(), nn.Linear(8, 1))

    def forward(self, u, i):
        eu, ei = self.user(u), self.item(i)
        dot = (eu * ei).sum(1, keepdim=True)
        return (dot + self.mlp(torch.cat([eu, ei], 1)) + self.bias).squeeze(1)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = Recommender()
    sparse_params = list(model.user.parameters()) + list(model.item.parameters())
    dense_params = [p for n, p in model.named_parameters() if not n.startswith(("user.", "item."))]
    sparse_opt = torch.optim.SparseAdam(sparse_params, lr=1e-2)
    dense_opt = torch.optim.Adam(dense_params, lr=1e-2)
    u, i = torch.randint(0, 30, (64,)), torch.randint(0, 40, (64,))
    rating = torch.rand(64) * 5
    for step in range(5):
        sparse_opt.zero_grad()
        dense_opt.zero_grad()
        loss = F.mse_loss(model(u, i), rating)
        loss.backward()
        sparse_opt.step()
        dense_opt.step()
        print(f"step {step} loss {loss.item():.6f} sparse grad {model.user.weight.grad.is_sparse}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
