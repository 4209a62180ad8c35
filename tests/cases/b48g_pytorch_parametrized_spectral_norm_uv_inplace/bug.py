# Report: pytorch/pytorch issue #68327 "Spectral Normalization issue." (same bug: #66363),
#   https://github.com/pytorch/pytorch/issues/68327
#   diagnosis and fix: https://github.com/pytorch/pytorch/pull/62293
# A GAN discriminator wrapped with the new torch.nn.utils.parametrizations.spectral_norm is called
# twice (on real X and on generated data) before one backward. Each call of the parametrization
# runs the power iteration, which writes u and v IN PLACE (F.normalize(..., out=self._u)) under
# no_grad. The old code cloned u/v only AFTER the in-place write, so the clone that the first
# forward saved for backward (torch.vdot(self._u, ...)) is the very tensor the second forward
# overwrites: l.backward() raises "one of the variables needed for gradient computation has been
# modified by an inplace operation". The old torch.nn.utils.spectral_norm works.
# The _SpectralNorm below is the parametrization as PyTorch shipped it then (trimmed, faithful).
import torch
from torch import nn
import torch.nn.functional as F
from torch.nn.utils import parametrize
from torch.nn.utils import spectral_norm as sn1

torch.manual_seed(0)


class _SpectralNorm(nn.Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        self.dim = dim
        self.eps = eps
        self.n_power_iterations = n_power_iterations
        weight_mat = self._reshape_weight_to_matrix(weight)
        h, w = weight_mat.size()
        u = weight_mat.new_empty(h).normal_(0, 1)
        v = weight_mat.new_empty(w).normal_(0, 1)
        self.register_buffer('_u', F.normalize(u, dim=0, eps=self.eps))
        self.register_buffer('_v', F.normalize(v, dim=0, eps=self.eps))
        self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        return weight.flatten(1)

    @torch.autograd.no_grad()
    def _power_method(self, weight_mat, n_power_iterations):
        for _ in range(n_power_iterations):
            self._u = F.normalize(torch.mv(weight_mat, self._v), dim=0, eps=self.eps, out=self._u)  # <- inplace_saved
            self._v = F.normalize(torch.mv(weight_mat.t(), self._u), dim=0, eps=self.eps, out=self._v)
        # See above on why we need to clone
        self._u = self._u.clone(memory_format=torch.contiguous_format)
        self._v = self._v.clone(memory_format=torch.contiguous_format)

    def forward(self, weight):
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        sigma = torch.vdot(self._u, torch.mv(weight_mat, self._v))
        return weight / sigma


def sn2(module, name='weight', n_power_iterations=1, eps=1e-12, dim=0):
    weight = getattr(module, name)
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


def run_with_spectral(spectral):
    discriminator = spectral(nn.Linear(10, 1))
    optim = torch.optim.Adam(discriminator.parameters())
    loss = nn.L1Loss()

    X = torch.ones(4, 10)
    real = torch.ones(4, 1)
    fake = torch.zeros(4, 1)

    optim.zero_grad()
    generated = torch.rand(4, 10)

    loss_real = loss(discriminator(X), real)
    loss_fake = loss(discriminator(generated), fake)

    l = loss_real + loss_fake

    l.backward()
    optim.step()
    print(spectral.__name__, "ok, loss", l.item())


if __name__ == "__main__":
    run_with_spectral(sn1)
    run_with_spectral(sn2)
