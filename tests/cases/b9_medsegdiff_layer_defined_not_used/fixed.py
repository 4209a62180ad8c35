"""The fixed twin: the unused layer is removed from __init__ (ImprintLab/MedSegDiff#27)."""
import torch
import torch.nn.functional as F
from torch import nn


class UNetBlock(nn.Module):
    def __init__(self, c=8, emb=16):
        super().__init__()
        self.conv_in = nn.Conv2d(2, c, 3, padding=1)
        self.emb_proj = nn.Linear(emb, c)
        self.conv_out = nn.Conv2d(c, 1, 3, padding=1)

    def forward(self, x, t_emb, cond):
        h = self.conv_in(torch.cat([x, cond], 1)) + self.emb_proj(t_emb)[:, :, None, None]
        return self.conv_out(F.silu(h))


torch.manual_seed(0)
model = UNetBlock()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
x, cond, t_emb = torch.randn(4, 1, 8, 8), torch.randn(4, 1, 8, 8), torch.randn(4, 16)
noise = torch.randn_like(x)
for step in range(3):
    loss = F.mse_loss(model(x + noise, t_emb, cond), noise)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("parameters without gradient:", [n for n, p in model.named_parameters() if p.grad is None])
