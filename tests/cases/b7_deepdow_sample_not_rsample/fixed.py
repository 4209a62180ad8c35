"""The fixed twin: rsample() keeps the reparameterized path, so the returns term trains the allocator
(jankrepl/deepdow#106)."""
import torch
from torch import nn


class StochasticAllocator(nn.Module):
    def __init__(self, n_assets=5, lookback=10):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(n_assets * lookback, 16), nn.ReLU())
        self.mu = nn.Linear(16, n_assets)
        self.log_sigma = nn.Linear(16, n_assets)

    def forward(self, x):
        h = self.net(x)
        dist = torch.distributions.Normal(self.mu(h), self.log_sigma(h).exp())
        logits = dist.rsample()
        return logits.softmax(dim=-1)


torch.manual_seed(0)
model = StochasticAllocator()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randn(32, 5, 10)
future_returns = torch.randn(32, 5) * 0.01 + torch.linspace(-0.01, 0.02, 5)
for step in range(40):
    weights = model(x)
    mean_return = (weights * future_returns).sum(-1).mean()
    penalty = sum(p.pow(2).sum() for p in model.parameters())
    loss = -mean_return + 1e-4 * penalty
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 13 == 0:
        print(f"step {step}: mean return {mean_return.item():.5f}")
