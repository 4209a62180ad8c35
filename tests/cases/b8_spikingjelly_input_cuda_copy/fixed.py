"""The fixed twin of spikingjelly_input_cuda_copy (https://github.com/fangwei123456/spikingjelly/issues/280)."""
import torch
from torch import nn


class STE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha):
        ctx.save_for_backward(x)
        ctx.alpha = alpha
        return (x >= 0).to(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * (x.abs() <= ctx.alpha).to(x), None


torch.manual_seed(0)
weight = nn.Parameter(torch.randn(8, 8, dtype=torch.float64))
x = torch.rand([4, 8], dtype=torch.float64, requires_grad=True)
spikes = STE.apply(x @ weight - 0.5, 1.0)
spikes.sum().backward()
print("x.grad is None:", x.grad is None, "weight grad norm", round(weight.grad.norm().item(), 4))
