import torch
from torch import nn

torch.manual_seed(0)
policy = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2))
opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
states = torch.randn(5, 4)
rewards = [1.0, 0.5, -0.2, 0.3, 1.2]
for episode in range(2):
    logp = torch.log_softmax(policy(states), dim=1)[:, 0]
    loss = -(logp * torch.tensor(rewards)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print("loss", loss.item())
