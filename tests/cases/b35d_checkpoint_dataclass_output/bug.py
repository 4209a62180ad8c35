# Reentrant activation checkpoint around a block whose forward returns a dataclass.
# The tensors inside the dataclass do not take part in autograd with use_reentrant=True,
# so the block (and everything before it) silently gets no gradient.
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)


@dataclass
class BlockOutput:
    hidden_states: torch.Tensor
    attn_scores: torch.Tensor


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qk = nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        scores = torch.softmax(self.qk(x) @ x.transpose(-1, -2), dim=-1)
        h = self.norm(x + scores @ x)
        h = h + self.mlp(h)
        return BlockOutput(hidden_states=h, attn_scores=scores)


class Model(nn.Module):
    def __init__(self, vocab=16, dim=8, n_blocks=2, gradient_checkpointing=True):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList([Block(dim) for _ in range(n_blocks)])
        self.head = nn.Linear(dim, vocab)
        self.gradient_checkpointing = gradient_checkpointing

    def forward(self, ids):
        h = self.embed(ids)
        for block in self.blocks:
            if self.gradient_checkpointing and self.training:
                out = checkpoint(block, h, use_reentrant=True)  # <- no_grad
            else:
                out = block(h)
            h = out.hidden_states
        return self.head(h)


model = Model()
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
ids = torch.randint(0, 16, (4, 6))
targets = torch.randint(0, 16, (4, 6))

model.train()
for step in range(3):
    logits = model(ids)
    loss = nn.functional.cross_entropy(logits.reshape(-1, 16), targets.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.4f}")

print("head.weight.grad is None:", model.head.weight.grad is None)
print("blocks[0].qk.weight.grad:", model.blocks[0].qk.weight.grad)
print("embed.weight.grad:", model.embed.weight.grad)
