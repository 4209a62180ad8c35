"""Mini-batch losses summed with `running += loss.item()` and the mean wrapped as the loss."""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
batches = [(torch.randn(8, 4), torch.randint(0, 3, (8,))) for _ in range(3)]
running = 0.0
for xb, yb in batches:
    running += nn.functional.cross_entropy(model(xb), yb).item()  # <- item
loss = torch.tensor(running / len(batches), requires_grad=True)
opt.zero_grad()
loss.backward()
opt.step()
