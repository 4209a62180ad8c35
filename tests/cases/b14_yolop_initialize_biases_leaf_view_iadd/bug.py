"""YOLOP, multi-task driving perception (hustvl/YOLOP#17, "Leaf Variable inplace bug fix"): `_initialize_biases`
takes `b = mi.bias.view(m.na, -1)` and adds the objectness and class priors with `b[:, 4] += ...`, an in-place write
into a view of a leaf that requires grad, so building the model raises "a view of a leaf Variable that requires grad
is being used in an in-place operation". The PR applies yolov5#1552's fix (the prior added without autograd
recording it); here the two writes run under torch.no_grad()."""
import math

import torch
from torch import nn


class Detect(nn.Module):
    def __init__(self, nc=1, anchors=3, ch=(16, 32)):
        super().__init__()
        self.nc, self.no, self.na = nc, nc + 5, anchors
        self.stride = torch.tensor([8.0, 16.0])
        self.m = nn.ModuleList(nn.Conv2d(x, self.no * self.na, 1) for x in ch)

    def forward(self, xs):
        return [mi(x) for mi, x in zip(self.m, xs)]


class MCnet(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.SiLU())
        self.down = nn.Sequential(nn.Conv2d(16, 32, 3, 2, 1), nn.SiLU())
        self.detect = Detect()
        self.seg_head = nn.Conv2d(16, 2, 1)
        self._initialize_biases()

    def _initialize_biases(self, cf=None):
        m = self.detect
        for mi, s in zip(m.m, m.stride):
            b = mi.bias.view(m.na, -1)
            b[:, 4] += math.log(8 / (640 / s) ** 2)  # <- autograd_error
            b[:, 5:] += math.log(0.6 / (m.nc - 0.99)) if cf is None else torch.log(cf / cf.sum())
            mi.bias = torch.nn.Parameter(b.view(-1), requires_grad=True)

    def forward(self, x):
        p3 = self.backbone(x)
        return self.detect([p3, self.down(p3)]), self.seg_head(p3)


torch.manual_seed(0)
model = MCnet()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.937)
for step in range(2):
    img = torch.randn(2, 3, 32, 32)
    det_out, seg_out = model(img)
    loss = sum(o.sigmoid().mean() for o in det_out) + nn.functional.cross_entropy(seg_out, torch.randint(0, 2, (2, 16, 16)))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
