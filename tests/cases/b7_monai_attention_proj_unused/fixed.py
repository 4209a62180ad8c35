"""The fixed twin: the attention block applies proj_attn to its output (Project-MONAI/GenerativeModels#402), so
every parameter takes part in the loss."""
import torch
import torch.nn.functional as F
from torch import nn


class AttentionBlock(nn.Module):
    def __init__(self, channels=8, num_head_channels=4):
        super().__init__()
        self.num_heads = channels // num_head_channels
        self.norm = nn.GroupNorm(2, channels)
        self.to_q, self.to_k, self.to_v = (nn.Linear(channels, channels) for _ in range(3))
        self.proj_attn = nn.Linear(channels, channels)

    def forward(self, x):
        residual = x
        b, c, h, w = x.shape
        x = self.norm(x).view(b, c, h * w).transpose(1, 2)
        q, k, v = self.to_q(x), self.to_k(x), self.to_v(x)
        attn = torch.softmax(q @ k.transpose(1, 2) / c ** 0.5, dim=-1)
        x = self.proj_attn(attn @ v)
        x = x.transpose(1, 2).reshape(b, c, h, w)
        return x + residual


torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), AttentionBlock(), nn.Conv2d(8, 1, 3, padding=1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
images = torch.randn(4, 1, 8, 8)
for step in range(5):
    noise = torch.randn_like(images)
    loss = F.mse_loss(model(images + noise), noise)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
unused = [name for name, p in model.named_parameters() if p.grad is None]
print(f"loss {loss.item():.4f}; parameters without gradient: {unused}")
