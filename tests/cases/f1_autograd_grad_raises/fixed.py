import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
t = torch.linspace(0, 1, 10)
u = (w[0] + w[1] * t + w[2] * t ** 2)
residual = torch.gradient(u, spacing=(t,))[0]
loss = residual.pow(2).mean()
(grad,) = torch.autograd.grad(loss, w)
print(grad)
