"""PyTorch forum, "Correctly generating multivariate Gaussian random variable",
https://discuss.pytorch.org/t/correctly-generating-multivariate-gaussian-random-variable/166050: a network
predicts per-output means and variances; T Monte Carlo samples are drawn into a preallocated `samples` tensor
and the loss compares those samples with known targets. With method 1,
`samples[t, ...] = torch.normal(mean=means, std=torch.sqrt(variances))`, the loss neither rises nor falls: the
network learns nothing. The answer (KFrank): torch.normal() only pretends to backpropagate, its output carries a
grad_fn but the gradients it sends to mean and std are zero; method 2, the reparameterised
`means + torch.sqrt(variances) * torch.randn_like(means)`, backpropagates through standard differentiable ops.
Fix (the answer's): draw the samples with method 2. Here every weight of the network gets an all-zero gradient."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)


class MeanVarNet(nn.Module):
    def __init__(self, d_in=6, d_out=3):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(d_in, 32), nn.Tanh())
        self.mean_head = nn.Linear(32, d_out)
        self.var_head = nn.Linear(32, d_out)

    def forward(self, x):
        h = self.body(x)
        means = self.mean_head(h)
        variances = F.softplus(self.var_head(h)) + 1e-4
        return means, variances


T = 8
net = MeanVarNet()
optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
inputs = torch.randn(64, 6)
targets = inputs[:, :3] * 2.0 + 0.1 * torch.randn(64, 3)
w_before = net.mean_head.weight.detach().clone()

for step in range(12):
    means, variances = net(inputs)
    samples = torch.zeros(T, *means.shape)
    for t in range(T):
        samples[t, ...] = means + torch.mul(torch.sqrt(variances), torch.randn_like(means))
    loss = F.mse_loss(samples, targets.expand(T, -1, -1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 4 == 0:
        print(f"step {step}: loss {loss.item():.4f}")

grad_norm = sum(p.grad.abs().sum().item() for p in net.parameters())
print("total |grad| of the network:", grad_norm)
print("mean head changed:", not torch.equal(w_before, net.mean_head.weight))
