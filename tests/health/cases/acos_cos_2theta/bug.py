import torch

x = torch.tensor([[1.0, 0.0], [0.6, 0.8]], requires_grad=True)
w = torch.tensor([[1.0, 0.0], [0.0, 1.0]], requires_grad=True)
xlen = x.pow(2).sum(1).pow(0.5).view(-1, 1)
wlen = w.pow(2).sum(0).pow(0.5).view(1, -1)
cos_theta = (x.mm(w) / xlen / wlen).clamp(-1, 1)
theta = cos_theta.acos()  # <- nan
cos_2_theta = torch.cos(2 * theta)
y = cos_2_theta * xlen.view(-1, 1)
y.sum().backward()
print(w.grad)
