import torch
from torch import nn

torch.manual_seed(0)
G = nn.Linear(5, 15)
D = nn.Sequential(nn.Linear(15, 8), nn.Tanh(), nn.Linear(8, 1))
opt_D = torch.optim.SGD(D.parameters(), lr=1e-2, momentum=0.9, foreach=True)
opt_G = torch.optim.SGD(G.parameters(), lr=1e-2, momentum=0.9, foreach=True)
fake = G(torch.randn(8, 5))
score = D(fake)
D_loss = score.mean()
G_loss = -score.mean()
opt_D.zero_grad()
D_loss.backward(retain_graph=True)
opt_G.zero_grad()
G_loss.backward()
opt_D.step()
opt_G.step()
