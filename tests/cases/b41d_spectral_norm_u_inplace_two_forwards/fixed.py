# torch.nn.utils.spectral_norm after pytorch#12671 (fixed by pytorch#13350), written out
# in plain torch: the forward pre-hook runs power iteration that updates the `u`
# buffer in place, and sigma = u . (W v) saves that same `u` for backward.
# A WGAN-style critic loss D(real) - D(fake) runs two forwards before one backward.
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.functional import normalize

torch.manual_seed(0)


class SpectralNorm(object):
    def __init__(self, name='weight', n_power_iterations=1, eps=1e-12):
        self.name = name
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def compute_weight(self, module):
        weight = getattr(module, self.name + '_orig')
        u = getattr(module, self.name + '_u')
        weight_mat = weight.view(weight.size(0), -1)
        with torch.no_grad():
            for _ in range(self.n_power_iterations):
                v = normalize(torch.mv(weight_mat.t(), u), dim=0, eps=self.eps)
                u = normalize(torch.mv(weight_mat, v), dim=0, eps=self.eps, out=u)
            if self.n_power_iterations > 0:
                # u is updated in place by the next forward; use a copy for this graph
                u = u.clone()
        sigma = torch.dot(u, torch.mv(weight_mat, v))
        return weight / sigma

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))

    @staticmethod
    def apply(module, name='weight'):
        fn = SpectralNorm(name)
        weight = module._parameters[name]
        height = weight.size(0)
        u = normalize(weight.new_empty(height).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + '_orig', weight)
        module.register_buffer(fn.name + '_u', u)
        module.register_forward_pre_hook(fn)
        return module


def spectral_norm(module, name='weight'):
    return SpectralNorm.apply(module, name)


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = spectral_norm(nn.Linear(16, 32))
        self.fc2 = spectral_norm(nn.Linear(32, 1))

    def forward(self, x):
        return self.fc2(F.leaky_relu(self.fc1(x), 0.2))


D = Critic()
G = nn.Linear(4, 16)
opt_d = torch.optim.Adam(D.parameters(), lr=1e-4, betas=(0.5, 0.9))

real = torch.randn(8, 16)
z = torch.randn(8, 4)
fake = G(z).detach()

opt_d.zero_grad()
d_loss = -D(real).mean() + D(fake).mean()
d_loss.backward()
opt_d.step()
print('critic loss', d_loss.item())
print('fc1.weight_orig grad norm', D.fc1.weight_orig.grad.norm().item())
