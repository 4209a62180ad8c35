"""The fixed twin: the gates are created trainable, as the paper describes."""
import torch
from torch import nn


class GatedAxialAttention(nn.Module):
    def __init__(self, planes=8, kernel_size=6):
        super().__init__()
        self.qkv_transform = nn.Linear(planes, planes * 3, bias=False)
        self.f_qr = nn.Parameter(torch.tensor(0.1), requires_grad=True)
        self.f_kr = nn.Parameter(torch.tensor(0.1), requires_grad=True)
        self.f_sve = nn.Parameter(torch.tensor(0.1), requires_grad=True)
        self.f_sv = nn.Parameter(torch.tensor(1.0), requires_grad=True)
        self.relative = nn.Parameter(torch.randn(planes, kernel_size), requires_grad=True)

    def forward(self, x):
        q, k, v = self.qkv_transform(x).chunk(3, dim=-1)
        qr = q @ self.relative
        kr = k @ self.relative
        qk = q @ k.transpose(-1, -2)
        qk = qk + self.f_qr * (qr @ qr.transpose(-1, -2)) + self.f_kr * (kr @ kr.transpose(-1, -2))
        similarity = torch.softmax(qk, dim=-1)
        sv = similarity @ v
        sve = similarity @ (v @ self.relative @ self.relative.T) / self.relative.shape[1]
        return self.f_sv * sv + self.f_sve * sve


torch.manual_seed(0)
model = GatedAxialAttention()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
x, y = torch.randn(2, 6, 8), torch.randn(2, 6, 8)
for step in range(3):
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f} f_qr {model.f_qr.item():.3f} f_sv {model.f_sv.item():.3f}")
