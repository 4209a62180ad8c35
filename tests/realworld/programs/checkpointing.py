"""Activation checkpointing: torch.utils.checkpoint.checkpoint (non-reentrant and reentrant) around
blocks, and checkpoint_sequential over a Sequential."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint, checkpoint_sequential


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc1 = nn.Linear(width, width * 2)
        self.fc2 = nn.Linear(width * 2, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(8, 16)
        self.blocks = nn.ModuleList(Block(16) for _ in range(3))
        self.tail = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU())
        self.head = nn.Linear(16, 2)

    def forward(self, x):
        x = self.stem(x)
        x = checkpoint(self.blocks[0], x, use_reentrant=False)
        x = checkpoint(self.blocks[1], x, use_reentrant=True)
        x = self.blocks[2](x)
        x = checkpoint_sequential(self.tail, 2, x, use_reentrant=False)
        return self.head(x)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(16, 8), torch.randint(0, 2, (16,))
    x.requires_grad_(True)  # reentrant checkpointing needs an input that requires grad
    for step in range(4):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
