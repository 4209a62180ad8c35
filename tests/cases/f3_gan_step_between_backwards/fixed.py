import torch
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 15))
D = nn.Sequential(nn.Linear(15, 16), nn.ReLU(), nn.Linear(16, 1), nn.Sigmoid())
opt_D = torch.optim.Adam(D.parameters(), lr=1e-4)
opt_G = torch.optim.Adam(G.parameters(), lr=1e-4)
real = torch.randn(8, 15)
for step in range(2):
    fake = G(torch.randn(8, 5))
    prob_real, prob_fake = D(real), D(fake)
    D_loss = -torch.mean(torch.log(prob_real) + torch.log(1.0 - prob_fake))
    G_loss = torch.mean(torch.log(1.0 - prob_fake))
    opt_D.zero_grad()
    D_loss.backward(retain_graph=True)
    opt_G.zero_grad()
    G_loss.backward()
    opt_D.step()
    opt_G.step()
