import torch
from torch import nn

torch.manual_seed(0)
heads = nn.ModuleList([nn.Linear(4, 1) for _ in range(3)])
opt = torch.optim.SGD(heads.parameters(), lr=0.1)
x = torch.randn(8, 4)
targets = [torch.randn(8, 1) for _ in range(3)]
losses = [nn.functional.mse_loss(h(x), t) for h, t in zip(heads, targets)]
loss = torch.stack(losses).sum()
opt.zero_grad()
loss.backward()
opt.step()
