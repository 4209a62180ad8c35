"""PyTorch forum, "Defining parameters by some transformation OR Retaining sub-graphs, but not the whole graph",
https://discuss.pytorch.org/t/defining-parameters-by-some-transformation-or-retaining-sub-graphs-but-not-the-whole-graph/50139:
a Bayesian-ML user keeps the log of a Normal's standard deviation as the learnable nn.Parameter (log_std) so that
optimisation cannot make it negative, computes std = torch.exp(log_std) once, builds the distribution
dd.Normal(loc=mean, scale=std) once, and then fits it to a target by a sampled KL cost in a loop. The first
backward frees the graph of the exp; the second iteration's backward needs it again and raises "Trying to backward
through the graph a second time". The user's own working version (and the thread's answer) recompute the
transformation every iteration: std = torch.exp(log_std) and the distribution are rebuilt inside the loop.
The script raises the RuntimeError."""
import torch
import torch.nn as nn
import torch.distributions as dd

torch.manual_seed(0)
torch.set_num_threads(1)

log_std = nn.Parameter(torch.Tensor([1]))  # the log of the scale is what we optimise
mean = nn.Parameter(torch.Tensor([1]))
std = torch.exp(log_std)  # <- autograd_error
dist = dd.Normal(loc=mean, scale=std)

optim = torch.optim.SGD([log_std, mean], lr=1e-4)  # the thread used 0.01; smaller so the summed cost stays stable here
target = dd.Normal(5, 5)  # target distribution to match
log_std_before = log_std.detach().clone()

for i in range(5):
    samples = dist.rsample((1000,))
    cost = -(target.log_prob(samples) - dist.log_prob(samples)).sum()  # sampled KL(dist || target)
    optim.zero_grad()
    cost.backward()
    optim.step()
    print(i, "log_std", round(log_std.item(), 4), "mean", round(mean.item(), 4), "cost", round(cost.item(), 2))

print("log_std changed:", not torch.equal(log_std_before, log_std.detach()))
