import torch

torch.manual_seed(0)

features = torch.randn(1, 10, 10, requires_grad=True)
std = torch.std(features, dim=0)  # <- nan
loss = std.mean()
loss.backward()
print(features.grad)
