# pytorch/pytorch#7705: MultivariateNormal.sample() vs rsample().detach() give different
# gradients; with sample() the covariance matrix gets grad None.
# torch.distributions of that release, cut down to the parts that matter (plain torch).
import math

import torch


class lazy_property(object):
    """Computes the wrapped attribute on first access and caches it on the instance."""

    def __init__(self, wrapped):
        self.wrapped = wrapped

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        value = self.wrapped(instance)  # <- no_grad
        setattr(instance, self.wrapped.__name__, value)
        return value


def _batch_mv(bmat, bvec):
    return torch.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


class MultivariateNormal(object):
    def __init__(self, loc, covariance_matrix):
        self.loc = loc
        self.covariance_matrix = covariance_matrix

    @lazy_property
    def scale_tril(self):
        return torch.linalg.cholesky(self.covariance_matrix)

    def rsample(self):
        eps = torch.randn_like(self.loc)
        return self.loc + _batch_mv(self.scale_tril, eps)

    def sample(self):
        with torch.no_grad():
            return self.rsample()

    def log_prob(self, value):
        diff = value - self.loc
        z = torch.linalg.solve_triangular(self.scale_tril, diff.unsqueeze(-1), upper=False).squeeze(-1)
        M = (z ** 2).sum(-1)
        half_log_det = self.scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        k = self.loc.shape[-1]
        return -0.5 * (k * math.log(2 * math.pi) + M) - half_log_det


torch.manual_seed(124)
inp = torch.randn(3)
W = torch.randn((2, 3), requires_grad=True)
loc = W @ inp
cov = torch.tensor([[1., 0.], [0., 2.]], requires_grad=True)
distr = MultivariateNormal(loc, cov)

x = distr.sample()  # difference here (rsample().detach() works)
loss = distr.log_prob(x)
loss.backward()
print("W.grad:", W.grad)
print("cov.grad:", cov.grad)
