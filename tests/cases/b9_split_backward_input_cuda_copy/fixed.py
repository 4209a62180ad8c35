"""The fixed twin: x is created with its dtype (device) directly, so it is the leaf that collects the gradient
(pytorch/pytorch#8287)."""
import torch
import torch.nn as nn

torch.manual_seed(0)
x = torch.randn(2, 2, dtype=torch.float64, requires_grad=True)
t = torch.randn(2, 2, dtype=torch.float64)
loss_func = nn.MSELoss()
l1 = nn.Sequential(*[nn.Linear(2, 2) for _ in range(3)]).double().requires_grad_(False)
l2 = nn.Sequential(*[nn.Linear(2, 2) for _ in range(3)]).double().requires_grad_(False)
for it in range(3):
    h1 = l1(x)
    h2 = h1.detach().requires_grad_()
    h3 = l2(h2)
    l = loss_func(h3, t)
    l.backward()
    print("h2:", h2.grad is not None)
    h1.backward(gradient=h2.grad)
    print("x:", x.grad)
    with torch.no_grad():
        if x.grad is not None:
            x -= 0.1 * x.grad
            x.grad = None
