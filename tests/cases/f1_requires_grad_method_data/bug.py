"""A weight made with .requires_grad_() is used through .data in the loss."""
import torch

torch.manual_seed(0)
w = torch.zeros(4).requires_grad_()
bias = torch.zeros(1, requires_grad=True)
x, y = torch.randn(32, 4), torch.randn(32)
for _ in range(3):
    pred = x @ w.data + bias  # <- data_attr
    loss = ((pred - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        bias -= 0.1 * bias.grad
        bias.grad.zero_()
