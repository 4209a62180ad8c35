"""A Parameter rebound to a computed value (`eta = eta * 2`): its .grad is None."""
import torch

torch.manual_seed(0)
eta = torch.nn.Parameter(torch.rand(10), requires_grad=True)
eta = eta * 2  # <- non_leaf_watched
eta.sum().backward()
print(eta.grad)  # <- symptom
