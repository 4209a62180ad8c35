"""The fixed twin: backward recomputes the forward under torch.enable_grad() from detached inputs that require
grad, so autograd.grad returns the gradients (pytorch/pytorch#45405)."""
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
        with torch.enable_grad():
            x0, w = x0.detach().requires_grad_(True), w.detach().requires_grad_(True)
            out = torch.sum(x0 * w)
        dfdx, dfdw = torch.autograd.grad(outputs=out, inputs=(x0, w), grad_outputs=grad_output)
        return dfdx, dfdw


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
