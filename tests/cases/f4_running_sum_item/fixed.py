import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
batches = [(torch.randn(8, 4), torch.randint(0, 3, (8,))) for _ in range(3)]
running = 0.0
total = 0
for xb, yb in batches:
    batch_loss = nn.functional.cross_entropy(model(xb), yb)
    running += batch_loss.item()
    total = total + batch_loss
loss = total / len(batches)
opt.zero_grad()
loss.backward()
opt.step()
print("mean loss", running / len(batches))
