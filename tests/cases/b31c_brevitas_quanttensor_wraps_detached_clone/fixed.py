"""Brevitas issue #631, https://github.com/Xilinx/brevitas/issues/631: simulating a network for hardware, the user
re-quantizes a backbone activation `y` onto a grid of step `re_scale` and wraps it by hand in a QuantTensor,
`QuantTensor(y.clone().detach(), scale=..., zero_point=..., bit_width=..., signed=True, training=...)`, to feed the
quantized head. The network runs, but "back propagation path is broken at y_q5, so the layers before y_q5 cannot be
learned". The reporter's own resolution: the `.clone().detach()` on the value is the problem; wrap `y` itself (the
scale/zero-point/bit-width metadata may stay constants). Brevitas's QuantTensor is stood in for by a small
NamedTuple with the same fields; the backbone/head are two tiny conv stacks, data is random."""
from typing import NamedTuple
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class QuantTensor(NamedTuple):
    value: torch.Tensor
    scale: torch.Tensor
    zero_point: torch.Tensor
    bit_width: torch.Tensor
    signed: bool
    training: bool


class RoundSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.round(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


class QuantHead(nn.Module):
    """Takes a QuantTensor, as brevitas' quant layers do with return_quant_tensor=True upstream."""
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 4, 3, padding=1)
        self.fc = nn.Linear(4, 10)

    def forward(self, qt):
        h = F.relu(self.conv(qt.value))
        return self.fc(h.mean((2, 3)))


class Net(nn.Module):
    def __init__(self, re_scale=0.125, backbone_act_bitwidth=5):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1))
        self.head = QuantHead()
        self.re_scale = re_scale
        self.backbone_act_bitwidth = backbone_act_bitwidth

    def forward(self, x):
        y = self.backbone(x)
        y = RoundSTE.apply(y / self.re_scale) * self.re_scale  # y lies on the re_scale grid
        y_q5 = QuantTensor(y,
                           scale=torch.Tensor([self.re_scale]).clone().detach(),
                           zero_point=torch.Tensor([0]).clone().detach(),
                           bit_width=torch.Tensor([self.backbone_act_bitwidth]).clone().detach(),
                           signed=True,
                           training=self.training)
        return self.head(y_q5)


model = Net()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
before = model.backbone[0].weight.detach().clone()
for step in range(5):
    images, labels = torch.randn(4, 3, 8, 8), torch.randint(0, 10, (4,))
    optimizer.zero_grad()
    loss = F.cross_entropy(model(images), labels)
    loss.backward()
    optimizer.step()
print("head.conv.weight grad is None:", model.head.conv.weight.grad is None)
print("backbone[0].weight grad is None:", model.backbone[0].weight.grad is None)
print("backbone[0].weight changed:", not torch.equal(before, model.backbone[0].weight))
