"""A test asserts the loss reaches the model; the loss was rebuilt from .item(), so it has no grad_fn."""
import torch
from torch import nn

from gradcheck_l2c import assert_grad_reaches

torch.manual_seed(0)
model = nn.Linear(4, 1)
x, y = torch.randn(8, 4), torch.randn(8, 1)
value = nn.functional.mse_loss(model(x), y).item()  # <- item
loss = torch.tensor(value)
assert_grad_reaches(loss, model)
