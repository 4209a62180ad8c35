# Fix: RuntimeError: one of the variables needed for gradient computation has been
# modified by an inplace operation   (FrEIA AllInOneBlock)
# https://github.com/vislearn/FrEIA/pull/164
#
# What went wrong: AllInOneBlock._affine scaled the subnet output in place
# (`a *= 0.1`), and also used `sub_jac -= ...` and `log_jac_det += ...`. When the
# coupling subnet's last op keeps its output for backward (here the subnet ends in
# nn.Tanh), the in-place scale bumps the version of that saved tensor and
# loss.backward() raises "modified by an inplace operation" (reported with PyTorch 2.0).
# Fix (merged PR #164): replace the three in-place ops with out-of-place ones:
# `a = a * 0.1`, `sub_jac = sub_jac - ...`, `log_jac_det = log_jac_det + ...`.
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)


class InvertibleModule(nn.Module):
    def __init__(self, dims_in, dims_c=None):
        super().__init__()
        self.dims_in = list(dims_in)
        self.dims_c = list(dims_c or [])


class AllInOneBlock(InvertibleModule):
    def __init__(self, dims_in, dims_c=[], subnet_constructor=None, affine_clamping=2.,
                 gin_block=False, global_affine_init=1.):
        super().__init__(dims_in, dims_c)
        channels = dims_in[0][0]
        self.input_rank = len(dims_in[0]) - 1
        self.sum_dims = tuple(range(1, 2 + self.input_rank))
        split_len1 = channels - channels // 2
        split_len2 = channels // 2
        self.splits = [split_len1, split_len2]
        self.permute_function = F.linear
        self.in_channels = channels
        self.clamp = affine_clamping
        self.GIN = gin_block

        global_scale = 2. * np.log(np.exp(0.5 * 10. * global_affine_init) - 1)
        self.softplus = nn.Softplus(beta=0.5)
        self.global_scale = nn.Parameter(torch.ones(1, self.in_channels) * float(global_scale))
        self.global_offset = nn.Parameter(torch.zeros(1, self.in_channels))

        w = np.zeros((channels, channels))
        for i, j in enumerate(np.random.permutation(channels)):
            w[i, j] = 1.
        self.w_perm = nn.Parameter(torch.FloatTensor(w), requires_grad=False)
        self.w_perm_inv = nn.Parameter(torch.FloatTensor(w.T), requires_grad=False)

        self.subnet = subnet_constructor(self.splits[0], 2 * self.splits[1])

    def global_scale_activation(self, a):
        return 0.1 * self.softplus(a)

    def _permute(self, x, rev=False):
        scale = self.global_scale_activation(self.global_scale)
        perm_log_jac = torch.sum(torch.log(scale))
        return (self.permute_function(x * scale + self.global_offset, self.w_perm), perm_log_jac)

    def _affine(self, x, a, rev=False):
        # the entire coupling coefficient tensor is scaled down by a
        # factor of ten for stability and easier initialization.
        a = a * 0.1
        ch = x.shape[1]

        sub_jac = self.clamp * torch.tanh(a[:, :ch])
        if self.GIN:
            sub_jac = sub_jac - torch.mean(sub_jac, dim=self.sum_dims, keepdim=True)

        return (x * torch.exp(sub_jac) + a[:, ch:],
                torch.sum(sub_jac, dim=self.sum_dims))

    def forward(self, x, c=[], rev=False, jac=True):
        x1, x2 = torch.split(x[0], self.splits, dim=1)
        a1 = self.subnet(x1)
        x2, j2 = self._affine(x2, a1)

        log_jac_det = j2
        x_out = torch.cat((x1, x2), 1)
        x_out, global_scaling_jac = self._permute(x_out, rev=False)

        n_pixels = x_out[0, :1].numel()
        log_jac_det = log_jac_det + (-1)**rev * n_pixels * global_scaling_jac

        return (x_out,), log_jac_det


def subnet_fc(c_in, c_out):
    return nn.Sequential(nn.Linear(c_in, 32), nn.ReLU(), nn.Linear(32, c_out), nn.Tanh())


class SequenceINN(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.module_list = nn.ModuleList()
        self.dim = dim

    def append(self, module_class, **kwargs):
        self.module_list.append(module_class([(self.dim,)], **kwargs))

    def forward(self, x):
        log_det_jac = 0
        x_or_z = (x,)
        for module in self.module_list:
            x_or_z, j = module(x_or_z)
            log_det_jac = j + log_det_jac
        return x_or_z[0], log_det_jac


inn = SequenceINN(4)
for k in range(4):
    inn.append(AllInOneBlock, subnet_constructor=subnet_fc)

optimizer = torch.optim.Adam(inn.parameters(), lr=1e-3)
data = torch.randn(64, 4) * torch.tensor([1., 2., 0.5, 1.5]) + 1.0

for step in range(3):
    optimizer.zero_grad()
    z, log_jac_det = inn(data)
    loss = 0.5 * torch.sum(z ** 2, 1) - log_jac_det
    loss = loss.mean() / 4
    loss.backward()
    optimizer.step()
    print(step, loss.item())
