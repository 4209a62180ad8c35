import torch

torch.manual_seed(0)
eta = torch.nn.Parameter(torch.rand(10), requires_grad=True)
scaled = eta * 2
scaled.sum().backward()
print(eta.grad)
