"""pytorch/pytorch#10943, "`Normal` distribution: Gaussian policy with zero gradient of mean head": a policy
gradient (REINFORCE) agent for continuous control with a Gaussian policy, a mean head and a log-variance head.
The action is drawn with `d.rsample()` and the loss is `-d.log_prob(a) * advantage`. Backward gives the mean
head an exactly zero gradient (the reporter printed `mean grad: tensor([[0., 0., 0.]])`) while the std head
gets one: rsample makes a = mean + std * eps, so log_prob(a) = -eps**2/2 - log(std) - const no longer depends on
the mean, and the two paths into the mean cancel. The answers: the score-function estimator needs an action
that carries no gradient, `d.sample()`; the mean head then learns. Here the mean head never moves."""
import torch
import torch.nn as nn
from torch.distributions import Normal

torch.manual_seed(0)


class GaussianPolicy(nn.Module):
    def __init__(self, obs_dim=3, act_dim=1):
        super().__init__()
        self.mean_head = nn.Linear(obs_dim, act_dim)
        self.logvar_head = nn.Linear(obs_dim, act_dim)

    def forward(self, x):
        mean = self.mean_head(x)
        logvar = self.logvar_head(x)
        std = torch.exp(0.5 * logvar)
        return Normal(mean, std)


def reward_fn(obs, action):
    # toy environment: the best action is the sum of the observation
    return -(action - obs.sum(-1, keepdim=True)) ** 2


policy = GaussianPolicy()
optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
mean_before = policy.mean_head.weight.detach().clone()

for it in range(20):
    x = torch.randn(32, 3)
    d = policy(x)
    a = d.sample()
    logprob = d.log_prob(a)
    with torch.no_grad():
        r = reward_fn(x, a)
        advantage = r - r.mean()
    L = -(logprob * advantage).mean()
    optimizer.zero_grad()
    L.backward()
    if it == 0:
        print("mean grad: ", policy.mean_head.weight.grad)
        print("std grad:  ", policy.logvar_head.weight.grad)
    optimizer.step()

print("mean head changed:", not torch.equal(mean_before, policy.mean_head.weight))
