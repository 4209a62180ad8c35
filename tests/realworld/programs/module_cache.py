"""Computed tensors kept on modules, as research code often does: a layer caches its last hidden
state (self.cache = h) for an auxiliary loss, the model stores self.loss in forward, and a
regulariser keeps the attention map it computed (self.attn)."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.query = nn.Linear(dim, dim)
        self.key = nn.Linear(dim, dim)
        self.attn = None

    def forward(self, x):
        scores = self.query(x) @ self.key(x).transpose(-1, -2) / x.size(-1) ** 0.5
        self.attn = scores.softmax(-1)
        return self.attn @ x


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(4, 8)
        self.attention = Attention(8)
        self.out = nn.Linear(8, 2)
        self.cache = None
        self.loss = None

    def forward(self, x, y=None):
        h = F.relu(self.embed(x))
        self.cache = h
        logits = self.out(self.attention(h).mean(1))
        if y is not None:
            self.loss = F.cross_entropy(logits, y)
        return logits


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = Model()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    x, y = torch.randn(8, 5, 4), torch.randint(0, 2, (8,))
    for step in range(4):
        optimizer.zero_grad()
        model(x, y)
        entropy = -(model.attention.attn * model.attention.attn.clamp_min(1e-9).log()).sum(-1).mean()
        loss = model.loss + 0.01 * entropy + 1e-3 * model.cache.pow(2).mean()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.6f} entropy {entropy.item():.5f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
