"""MedSegDiff under DDP (ImprintLab/MedSegDiff#27): "Expected to have finished reduction in the prior iteration"
because a parameterized layer is defined in __init__ but never used in forward, so its parameters get no gradient
("it looks like you define some parameterized layer in __init__ but not used in the forward"). Without DDP the
layer is silently never trained."""
import torch
import torch.nn.functional as F
from torch import nn


class UNetBlock(nn.Module):
    def __init__(self, c=8, emb=16):
        super().__init__()
        self.conv_in = nn.Conv2d(2, c, 3, padding=1)
        self.emb_proj = nn.Linear(emb, c)
        self.cond_proj = nn.Conv2d(1, c, 1)  # <- unused_parameter
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
