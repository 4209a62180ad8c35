"""The forward pass ran under torch.no_grad() (copied from the evaluation code): backward raises."""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 4), torch.randint(0, 3, (16,))
with torch.no_grad():
    logits = model(x)  # <- no_grad
loss = nn.functional.cross_entropy(logits, y)
loss.backward()
opt.step()
