"""DoRA from scratch (rasbt/dora-from-scratch#1): the notebook builds `model_lora` and `model_dora` from the same
frozen MLP, then trains `model_dora` with `torch.optim.Adam(model_lora.parameters())`. "omg how did I miss that. This
explains why I got some weird results": the DoRA magnitudes and low-rank matrices get gradients but sit in no
optimizer, while the optimizer steps the LoRA model, which never sees a loss."""
import copy
import torch
import torch.nn.functional as F
from torch import nn


class LoRALayer(nn.Module):
    def __init__(self, in_dim, out_dim, rank, alpha):
        super().__init__()
        self.A = nn.Parameter(torch.randn(in_dim, rank) / rank ** 0.5)
        self.B = nn.Parameter(torch.zeros(rank, out_dim))
        self.alpha = alpha

    def forward(self, x):
        return self.alpha * (x @ self.A @ self.B)


class LinearWithLoRA(nn.Module):
    def __init__(self, linear, rank=4, alpha=8):
        super().__init__()
        self.linear, self.lora = linear, LoRALayer(linear.in_features, linear.out_features, rank, alpha)

    def forward(self, x):
        return self.linear(x) + self.lora(x)


class LinearWithDoRA(LinearWithLoRA):
    def __init__(self, linear, rank=4, alpha=8):
        super().__init__(linear, rank, alpha)
        self.m = nn.Parameter(self.linear.weight.norm(p=2, dim=0, keepdim=True))

    def forward(self, x):
        combined = self.linear.weight + self.lora.alpha * (self.lora.A @ self.lora.B).T
        return F.linear(x, self.m * combined / combined.norm(p=2, dim=0, keepdim=True), self.linear.bias)


torch.manual_seed(0)
base = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
base.requires_grad_(False)
model_lora = copy.deepcopy(base)
model_lora[0], model_lora[2] = LinearWithLoRA(model_lora[0]), LinearWithLoRA(model_lora[2])
x, y = torch.randn(64, 16), torch.randint(0, 4, (64,))
optimizer = torch.optim.Adam(model_lora.parameters(), lr=5e-3)
for epoch in range(3):
    loss = F.cross_entropy(model_lora(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

model_dora = copy.deepcopy(base)
model_dora[0], model_dora[2] = LinearWithDoRA(model_dora[0]), LinearWithDoRA(model_dora[2])
optimizer = torch.optim.Adam(model_lora.parameters(), lr=5e-3)  # <- optimizer
m0 = model_dora[0].m.detach().clone()
for epoch in range(3):
    loss = F.cross_entropy(model_dora(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"DoRA magnitude grad set: {model_dora[0].m.grad is not None}; changed: {not torch.equal(model_dora[0].m, m0)}")
