"""`out = h` is not a copy: the slice assignment writes into h, which pow() saved for backward."""
import torch
from torch import nn

torch.manual_seed(0)
layer = nn.Linear(4, 4)
x = torch.randn(8, 4)
h = layer(x)
out = h
out[:, :2] = h[:, :2] ** 2  # <- inplace_saved
loss = out.sum()
loss.backward()  # <- symptom
