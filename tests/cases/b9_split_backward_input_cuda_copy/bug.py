"""Backward in two stages (pytorch/pytorch#8287): the graph is cut at h1 with detach().requires_grad_(), the second
half's backward gives h2.grad and h1.backward(gradient=h2.grad) is meant to carry it on to the input x; but x was
created as torch.randn(..., requires_grad=True).cuda(0), a copy and not the leaf, so x.grad stays None ("it is
possible in cpu, but it fails in cuda"). A dtype change stands in for the copy to the GPU."""
import torch
import torch.nn as nn

torch.manual_seed(0)
x = torch.randn(2, 2, requires_grad=True).to(torch.float64)  # <- non_leaf_watched
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
