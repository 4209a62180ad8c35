"""A custom surrogate-gradient spiking neuron (fangwei123456/spikingjelly#280): x = torch.rand(..., requires_grad=True)
.cuda() is a copy, a non-leaf, so after backward x.grad is None (the dtype cast stands in for .cuda() on this CPU)."""
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
x = torch.rand([4, 8], requires_grad=True).to(torch.float64)  # <- non_leaf_watched
spikes = STE.apply(x @ weight - 0.5, 1.0)
spikes.sum().backward()
print("x.grad:", x.grad, "weight grad norm", round(weight.grad.norm().item(), 4))
