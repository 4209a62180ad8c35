"""Training YOLO-Master's mixture-of-experts detector (Tencent/YOLO-Master#26): building the model runs a forward
pass to compute the strides, and the MoE block keeps its load-balancing loss on self.aux_loss, a tensor with
history; ModelEMA's deepcopy of the model then raises "Only Tensors created explicitly by the user (graph leaves)
support the deepcopy protocol at the moment" before the first training step."""
from copy import deepcopy

import torch
import torch.nn.functional as F
from torch import nn


class MoEBlock(nn.Module):
    def __init__(self, c=8, n_experts=4):
        super().__init__()
        self.router = nn.Conv2d(c, n_experts, 1)
        self.experts = nn.ModuleList(nn.Conv2d(c, c, 3, padding=1) for _ in range(n_experts))
        self.aux_loss = torch.zeros(())

    def forward(self, x):
        gates = self.router(x).mean((2, 3)).softmax(-1)
        out = sum(g[:, None, None, None] * e(x) for g, e in zip(gates.unbind(1), self.experts))
        importance = gates.mean(0)
        self.aux_loss = (importance * importance).sum() * gates.size(1)  # <- autograd_error
        return out


class Detector(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.moe = MoEBlock()
        self.head = nn.Conv2d(8, 6, 1)
        s = 64
        self.stride = torch.tensor([s / self.forward(torch.zeros(1, 3, s, s)).shape[-1]])

    def forward(self, x):
        return self.head(self.moe(F.silu(self.stem(x))))


class ModelEMA:
    def __init__(self, model, decay=0.9999):
        self.ema = deepcopy(model).eval()
        self.decay = decay
        for p in self.ema.parameters():
            p.requires_grad_(False)


torch.manual_seed(0)
model = Detector()
ema = ModelEMA(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
images, targets = torch.randn(2, 3, 64, 64), torch.randn(2, 6, 32, 32)
for step in range(3):
    loss = F.mse_loss(model(images), targets) + 0.01 * model.moe.aux_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
