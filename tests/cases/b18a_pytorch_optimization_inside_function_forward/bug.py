"""pytorch/pytorch: an inner optimization written inside a custom autograd.Function's forward.

Source: https://github.com/pytorch/pytorch/issues/32091
("Torch.autograd optimization is not working correctly when defined in Torch.autograd.function static method")

What the user saw: inside ExampleFunction.forward an nn.Parameter y is optimized for 100 steps with
loss = torch.sum(x * y); loss.backward(). The printed loss has no grad_fn and backward fails with
"RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn".

Why: autograd.Function.forward always runs with grad mode disabled (like torch.no_grad()), so nothing
computed inside it is recorded, even from a tensor with requires_grad=True.

Fix: compute the inner loss under torch.enable_grad() inside forward (from the detached input, so the
inner backward does not run into the outer graph).
"""
import torch
import torch.nn as nn

torch.manual_seed(0)


class ExampleFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = nn.Parameter(torch.zeros_like(x))
        for i in range(100):
            if y.grad is not None:
                y.grad.detach_()
                y.grad.zero_()
            loss = torch.sum(x * y)  # <- no_grad
            loss.backward()
            y.data -= 0.001 * y.grad
        return y.detach()

    @staticmethod
    def backward(ctx, grad_output):
        # y = -0.1 * x after 100 steps of 0.001 on d/dy sum(x * y) = x
        return -0.1 * grad_output


ex = ExampleFunction.apply

encoder = nn.Linear(4, 5)
opt = torch.optim.SGD(encoder.parameters(), lr=0.5)
inp, target = torch.randn(8, 4), torch.randn(8, 5)
for step in range(3):
    out = ex(encoder(inp))
    loss = ((out - target) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.4f}")
print("encoder.weight.grad is None:", encoder.weight.grad is None)
