"""The fixed twin: evaluate() runs under torch.no_grad() (snowflakedb/ArcticTraining#265), so the cached rotary
table is an ordinary tensor that training can save for backward."""
import torch
import torch.nn.functional as F
from torch import nn


class RotaryAttention(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.dim = dim
        self.cos_cached = None

    def rotary(self, seq_len):
        if self.cos_cached is None or self.cos_cached.size(0) < seq_len:
            inv_freq = 1.0 / (10000 ** (torch.arange(0, self.dim, 2).float() / self.dim))
            freqs = torch.outer(torch.arange(seq_len).float(), inv_freq)
            self.cos_cached = torch.cat([freqs, freqs], -1).cos()
        return self.cos_cached[:seq_len]

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, -1)
        cos = self.rotary(x.size(1))
        q, k = q * cos, k * cos
        att = (q @ k.transpose(-1, -2) / self.dim ** 0.5).softmax(-1)
        return self.out(att @ v)


class Trainer:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    @torch.no_grad()
    def evaluate(self, x, y):
        self.model.eval()
        return F.mse_loss(self.model(x), y).item()

    def train_step(self, x, y):
        self.model.train()
        loss = F.mse_loss(self.model(x), y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()


torch.manual_seed(0)
trainer = Trainer(RotaryAttention())
x, y = torch.randn(4, 6, 16), torch.randn(4, 6, 16)
print(f"eval loss before training {trainer.evaluate(x, y):.4f}")
for step in range(3):
    print(f"step {step}: loss {trainer.train_step(x, y):.4f}")
