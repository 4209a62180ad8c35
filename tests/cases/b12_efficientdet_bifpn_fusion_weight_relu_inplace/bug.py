"""A BiFPN fusion node re-implemented from EfficientDet (zylo117/Yet-Another-EfficientDet-Pytorch#503): the learnable
fusion weights are a leaf `nn.Parameter` passed straight to the ReLU module (`self.weight_relu(self.weight)`), and the
ReLU works in place, so the forward raises "RuntimeError: a leaf Variable that requires grad is being used in an
in-place operation." The maintainer: "Try performing relu on self.weight.clone(), instead of self.weight"."""
import torch
import torch.nn.functional as F
from torch import nn


class Fusefeature(nn.Module):
    def __init__(self, e=1e-4):
        super().__init__()
        self.e = e
        self.weight = nn.Parameter(torch.ones(2, dtype=torch.float32), requires_grad=True)
        self.weight_relu = nn.ReLU(inplace=True)
        self.conv = nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x):
        weight = self.weight_relu(self.weight)  # <- autograd_error
        weight = weight / (torch.sum(weight, dim=0) + self.e)
        return self.conv(F.silu(weight[0] * x[0] + weight[1] * x[1]))


torch.manual_seed(0)
fuse = Fusefeature()
optimizer = torch.optim.AdamW(fuse.parameters(), lr=1e-2)
p6_in, p7_up = torch.randn(2, 8, 8, 8), torch.randn(2, 8, 8, 8)
target = torch.randn(2, 8, 8, 8)
w0 = fuse.weight.detach().clone()
for step in range(3):
    loss = F.mse_loss(fuse([p6_in, p7_up]), target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"fusion weights grad: {fuse.weight.grad}; changed: {not torch.equal(fuse.weight, w0)}")
