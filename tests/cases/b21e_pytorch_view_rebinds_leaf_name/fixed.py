"""pytorch/pytorch#8474 "[Bug] Sometimes gradient doesn't back-propagate after view",
https://github.com/pytorch/pytorch/issues/8474
Symptom: after x1 = x1.view((-1, 1)) and x1.sum().backward(), print(x1.grad) shows None, while the same code
without the view prints a gradient of ones; the reporter took it for autograd losing the gradient at view().
Why (fmassa, agreed by SsnL): the name x1 is rebound to the view, a non-leaf tensor, whose .grad is never
populated; the gradient did arrive, in the leaf that the name x1 no longer refers to.
Fix (fmassa): give the viewed tensor its own name (x2 = x1.view(...)) and read the leaf's x1.grad."""
import torch

torch.manual_seed(0)

x1 = torch.rand(5).requires_grad_()
x2 = x1.view((-1, 1))
x2.sum().backward()
print(x1.grad)

x1 = torch.rand(5).requires_grad_()
x1.sum().backward()
print(x1.grad)
