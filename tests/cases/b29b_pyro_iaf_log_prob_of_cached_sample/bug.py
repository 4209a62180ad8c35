"""pyro-ppl/pyro#1885, https://github.com/pyro-ppl/pyro/issues/1885 "Gradients not preserved by IAF caching": an
InverseAutoregressiveFlow (a transform with cache_size=1 that also caches the log-scale it computed) wrapped in a
TransformedDistribution. log_prob of an arbitrary point carries grad_fn, but log_prob of a point drawn with
p_iaf.sample() does not: sample() runs the transforms under torch.no_grad(), and log_prob then reuses the cached
inverse and the cached log-scale, both made without graph. The maintainer's answer: use rsample() if you want
gradients. The flow here is the same shape, written with torch.distributions, fitted by reverse KL to a 2-D target
(sample from the flow, score the sample); loss.backward() raises "element 0 of tensors does not require grad"."""
import torch
from torch import nn
from torch.distributions import Independent, Normal, TransformedDistribution, constraints
from torch.distributions.transforms import Transform

torch.manual_seed(0)


class AutoRegressiveNN(nn.Module):
    """MADE for 2 inputs: output i depends only on inputs < i."""
    def __init__(self, input_dim=2, hidden_dim=16):
        super().__init__()
        self.l1 = nn.Linear(input_dim, hidden_dim)
        self.l2 = nn.Linear(hidden_dim, 2 * input_dim)
        self.register_buffer("m1", torch.tensor([[1.0, 0.0]]).expand(hidden_dim, input_dim).clone())
        self.register_buffer("m2", torch.tensor([[0.0], [1.0]]).repeat(2, hidden_dim))

    def forward(self, x):
        h = torch.relu(nn.functional.linear(x, self.l1.weight * self.m1, self.l1.bias))
        mean, log_scale = nn.functional.linear(h, self.l2.weight * self.m2, self.l2.bias).chunk(2, dim=-1)
        return mean, log_scale.clamp(-5.0, 3.0)


class InverseAutoregressiveFlow(Transform):
    domain = constraints.real_vector
    codomain = constraints.real_vector
    bijective = True

    def __init__(self, arn):
        super().__init__(cache_size=1)
        self.arn = arn
        self._cached_log_scale = None

    def _call(self, x):
        mean, log_scale = self.arn(x)
        self._cached_log_scale = log_scale
        return torch.exp(log_scale) * x + mean

    def _inverse(self, y):
        x = torch.zeros_like(y)
        for idx in range(y.size(-1)):
            mean, log_scale = self.arn(x)
            x = x.clone()
            x[..., idx] = (y[..., idx] - mean[..., idx]) * torch.exp(-log_scale[..., idx])
        self._cached_log_scale = self.arn(x)[1]
        return x

    def log_abs_det_jacobian(self, x, y):
        log_scale = self._cached_log_scale if self._cached_log_scale is not None else self.arn(x)[1]
        return log_scale.sum(-1)


def target_log_prob(z):  # a banana-shaped 2-D target
    return Normal(0.0, 1.0).log_prob(z[..., 0]) + Normal(0.5 * z[..., 0] ** 2, 0.5).log_prob(z[..., 1])


base_dist = Independent(Normal(torch.zeros(2), torch.ones(2)), 1)
arn = AutoRegressiveNN(2, 16)
iaf_transform = InverseAutoregressiveFlow(arn)
p_iaf = TransformedDistribution(base_dist, [iaf_transform])
optimizer = torch.optim.Adam(arn.parameters(), lr=1e-2)
w_before = arn.l2.weight.detach().clone()

for step in range(20):
    x = p_iaf.sample((256,))  # <- no_grad
    loss = (p_iaf.log_prob(x) - target_log_prob(x)).mean()
    if step == 0:
        print("log_prob of a sample:", p_iaf.log_prob(x)[:2])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

print("reverse KL (up to a constant): %.4f" % loss.item())
print("flow weights changed:", not torch.equal(w_before, arn.l2.weight))
