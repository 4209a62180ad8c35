"""softmax-splatting (sniklaus/softmax-splatting): the splatting Function's saved input is modified in place.

Source: https://github.com/sniklaus/softmax-splatting/issues/50

What the user saw: "RuntimeError: one of the variables needed for gradient computation has been modified
by an inplace operation" when calling loss.backward() on a frame-interpolation net that uses softsplat.
The maintainer asked which layers come before and after the splatting.

Why: the custom autograd.Function saves its input feature map with ctx.save_for_backward(tenIn, tenFlow)
and reads it back in backward. The same feature tensor is later passed through an in-place activation
(ReLU(inplace=True)) in the synthesis branch, which bumps its version counter, so backward refuses it.

Fix (what the user did): save copies, ctx.save_for_backward(tenIn.clone(), tenFlow.clone()).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def _splat(tenIn, tenFlow):
    # summation splatting along x with linear weights (a stand-in for the CUDA kernel)
    b, c, h, w = tenIn.shape
    gx = torch.arange(w, dtype=tenIn.dtype).view(1, 1, 1, w) + tenFlow[:, :1]
    pos = torch.arange(w, dtype=tenIn.dtype).view(1, 1, w, 1, 1)
    weight = torch.relu(1.0 - (gx.unsqueeze(2) - pos).abs())
    return (tenIn.unsqueeze(2) * weight).sum(-1).permute(0, 1, 3, 2)


class softsplat_func(torch.autograd.Function):
    @staticmethod
    def forward(self, tenIn, tenFlow):
        self.save_for_backward(tenIn.clone(), tenFlow.clone())
        return _splat(tenIn, tenFlow)

    @staticmethod
    def backward(self, tenOutgrad):
        tenIn, tenFlow = self.saved_tensors
        with torch.enable_grad():
            i = tenIn.detach().requires_grad_()
            f = tenFlow.detach().requires_grad_()
            tenIngrad, tenFlowgrad = torch.autograd.grad(_splat(i, f), (i, f), tenOutgrad)
        return tenIngrad, tenFlowgrad


class Synthesis(nn.Module):
    def __init__(self):
        super().__init__()
        self.netFeat = nn.Conv2d(3, 4, 3, padding=1)
        self.netFlow = nn.Conv2d(6, 1, 3, padding=1)
        self.relu = nn.ReLU(inplace=True)
        self.netOut = nn.Conv2d(8, 3, 3, padding=1)

    def forward(self, tenOne, tenTwo):
        tenFeat = self.netFeat(tenOne)
        tenFlow = self.netFlow(torch.cat([tenOne, tenTwo], 1))
        tenWarp = softsplat_func.apply(tenFeat, tenFlow)
        return self.netOut(torch.cat([self.relu(tenFeat), tenWarp], 1))


net = Synthesis()
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
tenOne, tenTwo, tenGt = torch.randn(2, 3, 6, 6), torch.randn(2, 3, 6, 6), torch.randn(2, 3, 6, 6)
for step in range(3):
    loss = F.l1_loss(net(tenOne, tenTwo), tenGt)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.4f}")
print("netFlow.weight.grad is None:", net.netFlow.weight.grad is None)
