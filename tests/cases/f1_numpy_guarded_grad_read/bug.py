"""The prediction went through NumPy; the script guards backward with `if loss.requires_grad` and then
finds weight.grad is None."""
import numpy as np
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
x, y = torch.randn(16, 4), torch.randn(16, 1)
pred = model(x).detach().numpy()  # <- numpy
loss = torch.from_numpy(np.square(pred - y.numpy())).mean()
if loss.requires_grad:
    loss.backward()
print("grad:", model.weight.grad)  # <- symptom
