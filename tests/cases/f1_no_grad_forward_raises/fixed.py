import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 4), torch.randint(0, 3, (16,))
logits = model(x)
loss = nn.functional.cross_entropy(logits, y)
loss.backward()
opt.step()
with torch.no_grad():
    print("eval", model(x).argmax(1).float().mean().item())
