"""A custom autograd.Function whose backward differentiates its own forward with torch.autograd.grad
(pytorch/pytorch#45405): backward runs with grad mode off, so `out = torch.sum(x0 * w)` recomputed there has no
graph; setting `out.requires_grad = True` only makes it a fresh leaf, autograd.grad(..., allow_unused=True) returns
(None,) and the input's .grad stays None ("why the following autograd.grad() return None?"; the fix: recompute
under torch.enable_grad() from inputs that require grad)."""
import torch
from torch import nn


class func(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x0, w):
        out = torch.sum(x0 * w)
        ctx.save_for_backward(w, x0)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        w, x0 = ctx.saved_tensors
        out = torch.sum(x0 * w)  # <- non_differentiable
        out.requires_grad = True
        x0.requires_grad = True
        w.requires_grad = True
        dfdx = torch.autograd.grad(outputs=out, inputs=x0, grad_outputs=grad_output, allow_unused=True)
        dfdw = torch.autograd.grad(outputs=out, inputs=w, grad_outputs=grad_output, allow_unused=True)
        print("YYYY ", dfdx, dfdw)
        return dfdx[0], dfdw[0]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.rand(2, 3)

    def forward(self, x):
        return func.apply(x, self.w)


torch.manual_seed(0)
net = Net()
data = torch.rand(2, 3)
data.requires_grad = True
gt = 5
out = net(data)
loss = out - gt
print("run backward")
loss.backward()
print(f"data.grad: {data.grad}")
