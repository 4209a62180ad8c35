# Inplace operation error occurs with batch size 1  (chaiyujin/glow-pytorch)
# Report: https://github.com/chaiyujin/glow-pytorch/issues/2
# Fix:    https://github.com/chaiyujin/glow-pytorch/pull/6 ("Fixed un-computable gradients", merged)
#
# What went wrong: FlowStep.normal_flow splits z into two channel views z1, z2
# (thops.split_feature slices the same tensor) and then runs the coupling
# in place: `z2 += self.f(z1)` (additive) / `z2 += shift; z2 *= scale` (affine).
# z1 was saved by the first conv of the coupling net self.f, and z2 shares its
# storage/version counter with z1, so loss.backward() raises "one of the
# variables needed for gradient computation has been modified by an inplace
# operation".
# Fix (PR #6): replace the in-place coupling ops with out-of-place ones:
# `z2 = z2 + self.f(z1)`, `z2 = z2 + shift`, `z2 = z2 * scale`.
# Plain-torch reduction of glow/{thops,modules,models,trainer}.py; hparams are a
# tiny namespace instead of the JSON config, data are random tensors.
import types

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)


# ----------------------------------------------------------------- thops.py
class thops:
    @staticmethod
    def sum(tensor, dim=None, keepdim=False):
        if dim is None:
            return torch.sum(tensor)
        if isinstance(dim, int):
            dim = [dim]
        dim = sorted(dim)
        for d in dim:
            tensor = tensor.sum(dim=d, keepdim=True)
        if not keepdim:
            for i, d in enumerate(dim):
                tensor.squeeze_(d - i)
        return tensor

    @staticmethod
    def mean(tensor, dim=None, keepdim=False):
        if dim is None:
            return torch.mean(tensor)
        if isinstance(dim, int):
            dim = [dim]
        dim = sorted(dim)
        for d in dim:
            tensor = tensor.mean(dim=d, keepdim=True)
        if not keepdim:
            for i, d in enumerate(dim):
                tensor.squeeze_(d - i)
        return tensor

    @staticmethod
    def split_feature(tensor, type="split"):
        C = tensor.size(1)
        if type == "split":
            return tensor[:, :C // 2, ...], tensor[:, C // 2:, ...]
        elif type == "cross":
            return tensor[:, 0::2, ...], tensor[:, 1::2, ...]

    @staticmethod
    def cat_feature(tensor_a, tensor_b):
        return torch.cat((tensor_a, tensor_b), dim=1)

    @staticmethod
    def pixels(tensor):
        return int(tensor.size(2) * tensor.size(3))


# --------------------------------------------------------------- modules.py
class _ActNorm(nn.Module):
    def __init__(self, num_features, scale=1.):
        super().__init__()
        size = [1, num_features, 1, 1]
        self.register_parameter("bias", nn.Parameter(torch.zeros(*size)))
        self.register_parameter("logs", nn.Parameter(torch.zeros(*size)))
        self.num_features = num_features
        self.scale = float(scale)
        self.inited = False

    def initialize_parameters(self, input):
        if not self.training:
            return
        with torch.no_grad():
            bias = thops.mean(input.clone(), dim=[0, 2, 3], keepdim=True) * -1.0
            vars = thops.mean((input.clone() + bias) ** 2, dim=[0, 2, 3], keepdim=True)
            logs = torch.log(self.scale / (torch.sqrt(vars) + 1e-6))
            self.bias.data.copy_(bias.data)
            self.logs.data.copy_(logs.data)
            self.inited = True

    def _center(self, input, reverse=False):
        return input + self.bias if not reverse else input - self.bias

    def _scale(self, input, logdet=None, reverse=False):
        logs = self.logs
        input = input * torch.exp(logs) if not reverse else input * torch.exp(-logs)
        if logdet is not None:
            dlogdet = thops.sum(logs) * thops.pixels(input)
            if reverse:
                dlogdet *= -1
            logdet = logdet + dlogdet
        return input, logdet

    def forward(self, input, logdet=None, reverse=False):
        if not self.inited:
            self.initialize_parameters(input)
        if not reverse:
            input = self._center(input, reverse)
            input, logdet = self._scale(input, logdet, reverse)
        else:
            input, logdet = self._scale(input, logdet, reverse)
            input = self._center(input, reverse)
        return input, logdet


class ActNorm2d(_ActNorm):
    pass


class Conv2d(nn.Conv2d):
    def __init__(self, in_channels, out_channels, kernel_size=[3, 3], stride=[1, 1],
                 do_actnorm=True, weight_std=0.05):
        padding = [((k - 1) * s + 1) // 2 for k, s in zip(kernel_size, stride)]
        super().__init__(in_channels, out_channels, kernel_size, stride, padding,
                         bias=(not do_actnorm))
        self.weight.data.normal_(mean=0.0, std=weight_std)
        if not do_actnorm:
            self.bias.data.zero_()
        else:
            self.actnorm = ActNorm2d(out_channels)
        self.do_actnorm = do_actnorm

    def forward(self, input):
        x = super().forward(input)
        if self.do_actnorm:
            x, _ = self.actnorm(x)
        return x


class Conv2dZeros(nn.Conv2d):
    def __init__(self, in_channels, out_channels, kernel_size=[3, 3], stride=[1, 1],
                 logscale_factor=3):
        padding = [((k - 1) * s + 1) // 2 for k, s in zip(kernel_size, stride)]
        super().__init__(in_channels, out_channels, kernel_size, stride, padding)
        self.logscale_factor = logscale_factor
        self.register_parameter("logs", nn.Parameter(torch.zeros(out_channels, 1, 1)))
        self.weight.data.zero_()
        self.bias.data.zero_()

    def forward(self, input):
        output = super().forward(input)
        return output * torch.exp(self.logs * self.logscale_factor)


class InvertibleConv1x1(nn.Module):
    def __init__(self, num_channels):
        super().__init__()
        w_shape = [num_channels, num_channels]
        w_init = np.linalg.qr(np.random.randn(*w_shape))[0].astype(np.float32)
        self.register_parameter("weight", nn.Parameter(torch.Tensor(w_init)))
        self.w_shape = w_shape

    def get_weight(self, input, reverse):
        w_shape = self.w_shape
        dlogdet = torch.slogdet(self.weight)[1] * thops.pixels(input)
        if not reverse:
            weight = self.weight.view(w_shape[0], w_shape[1], 1, 1)
        else:
            weight = torch.inverse(self.weight.double()).float().view(w_shape[0], w_shape[1], 1, 1)
        return weight, dlogdet

    def forward(self, input, logdet=None, reverse=False):
        weight, dlogdet = self.get_weight(input, reverse)
        z = F.conv2d(input, weight)
        if logdet is not None:
            logdet = logdet + dlogdet if not reverse else logdet - dlogdet
        return z, logdet


class GaussianDiag:
    Log2PI = float(np.log(2 * np.pi))

    @staticmethod
    def likelihood(mean, logs, x):
        return -0.5 * (logs * 2. + ((x - mean) ** 2) / torch.exp(logs * 2.) + GaussianDiag.Log2PI)

    @staticmethod
    def logp(mean, logs, x):
        return thops.sum(GaussianDiag.likelihood(mean, logs, x), dim=[1, 2, 3])


class Split2d(nn.Module):
    def __init__(self, num_channels):
        super().__init__()
        self.conv = Conv2dZeros(num_channels // 2, num_channels)

    def split2d_prior(self, z):
        h = self.conv(z)
        return thops.split_feature(h, "cross")

    def forward(self, input, logdet=0., reverse=False, eps_std=None):
        z1, z2 = thops.split_feature(input, "split")
        mean, logs = self.split2d_prior(z1)
        logdet = GaussianDiag.logp(mean, logs, z2) + logdet
        return z1, logdet


def squeeze2d(input, factor=2):
    B, C, H, W = input.size()
    x = input.view(B, C, H // factor, factor, W // factor, factor)
    x = x.permute(0, 1, 3, 5, 2, 4).contiguous()
    return x.view(B, C * factor * factor, H // factor, W // factor)


class SqueezeLayer(nn.Module):
    def __init__(self, factor):
        super().__init__()
        self.factor = factor

    def forward(self, input, logdet=None, reverse=False):
        return squeeze2d(input, self.factor), logdet


# ---------------------------------------------------------------- models.py
def f(in_channels, out_channels, hidden_channels):
    return nn.Sequential(
        Conv2d(in_channels, hidden_channels), nn.ReLU(inplace=True),
        Conv2d(hidden_channels, hidden_channels, kernel_size=[1, 1]), nn.ReLU(inplace=True),
        Conv2dZeros(hidden_channels, out_channels))


class FlowStep(nn.Module):
    def __init__(self, in_channels, hidden_channels, actnorm_scale=1.0,
                 flow_coupling="additive"):
        super().__init__()
        self.flow_coupling = flow_coupling
        self.actnorm = ActNorm2d(in_channels, actnorm_scale)
        self.invconv = InvertibleConv1x1(in_channels)
        if flow_coupling == "additive":
            self.f = f(in_channels // 2, in_channels // 2, hidden_channels)
        elif flow_coupling == "affine":
            self.f = f(in_channels // 2, in_channels, hidden_channels)

    def forward(self, input, logdet=None, reverse=False):
        return self.normal_flow(input, logdet)

    def normal_flow(self, input, logdet):
        assert input.size(1) % 2 == 0
        # 1. actnorm
        z, logdet = self.actnorm(input, logdet=logdet, reverse=False)
        # 2. permute
        z, logdet = self.invconv(z, logdet, False)
        # 3. coupling
        z1, z2 = thops.split_feature(z, "split")
        if self.flow_coupling == "additive":
            z2 += self.f(z1)  # <- inplace_saved
        elif self.flow_coupling == "affine":
            h = self.f(z1)
            shift, scale = thops.split_feature(h, "cross")
            scale = torch.sigmoid(scale + 2.)
            z2 += shift
            z2 *= scale
            logdet = thops.sum(torch.log(scale), dim=[1, 2, 3]) + logdet
        z = thops.cat_feature(z1, z2)
        return z, logdet


class FlowNet(nn.Module):
    def __init__(self, image_shape, hidden_channels, K, L, actnorm_scale=1.0,
                 flow_coupling="additive"):
        super().__init__()
        self.layers = nn.ModuleList()
        self.output_shapes = []
        H, W, C = image_shape
        for i in range(L):
            C, H, W = C * 4, H // 2, W // 2
            self.layers.append(SqueezeLayer(factor=2))
            self.output_shapes.append([-1, C, H, W])
            for _ in range(K):
                self.layers.append(FlowStep(in_channels=C, hidden_channels=hidden_channels,
                                            actnorm_scale=actnorm_scale,
                                            flow_coupling=flow_coupling))
                self.output_shapes.append([-1, C, H, W])
            if i < L - 1:
                self.layers.append(Split2d(num_channels=C))
                self.output_shapes.append([-1, C // 2, H, W])
                C = C // 2

    def forward(self, input, logdet=0., reverse=False, eps_std=None):
        return self.encode(input, logdet)

    def encode(self, z, logdet=0.0):
        for layer, shape in zip(self.layers, self.output_shapes):
            z, logdet = layer(z, logdet, reverse=False)
        return z, logdet


class Glow(nn.Module):
    def __init__(self, hparams):
        super().__init__()
        self.flow = FlowNet(image_shape=hparams.Glow.image_shape,
                            hidden_channels=hparams.Glow.hidden_channels,
                            K=hparams.Glow.K, L=hparams.Glow.L,
                            actnorm_scale=hparams.Glow.actnorm_scale,
                            flow_coupling=hparams.Glow.flow_coupling)
        self.hparams = hparams
        C = self.flow.output_shapes[-1][1]
        self.learn_top = Conv2dZeros(C * 2, C * 2)
        self.register_parameter(
            "prior_h",
            nn.Parameter(torch.zeros([hparams.Train.batch_size,
                                      self.flow.output_shapes[-1][1] * 2,
                                      self.flow.output_shapes[-1][2],
                                      self.flow.output_shapes[-1][3]])))

    def prior(self, y_onehot=None):
        h = self.prior_h.detach().clone()
        h = self.learn_top(h)
        return thops.split_feature(h, "split")

    def forward(self, x=None, y_onehot=None):
        return self.normal_flow(x, y_onehot)

    def normal_flow(self, x, y_onehot):
        pixels = thops.pixels(x)
        z = x + torch.normal(mean=torch.zeros_like(x), std=torch.ones_like(x) * (1. / 256.))
        logdet = torch.zeros_like(x[:, 0, 0, 0])
        logdet += float(-np.log(256.) * pixels)
        z, objective = self.flow(z, logdet=logdet, reverse=False)
        mean, logs = self.prior(y_onehot)
        objective += GaussianDiag.logp(mean, logs, z)
        nll = (-objective) / float(np.log(2.) * pixels)
        return z, nll, None

    @staticmethod
    def loss_generative(nll):
        return torch.mean(nll)


# --------------------------------------------------------------- trainer.py
hparams = types.SimpleNamespace(
    Glow=types.SimpleNamespace(image_shape=(8, 8, 3), hidden_channels=16, K=2, L=2,
                               actnorm_scale=1.0, flow_coupling="additive"),
    Train=types.SimpleNamespace(batch_size=1))

graph = Glow(hparams)
optim = torch.optim.Adam(graph.parameters(), lr=1e-3)

x = torch.rand(hparams.Train.batch_size, 3, 8, 8)  # one random "image"
for global_step in range(5):
    z, nll, y_logits = graph(x=x, y_onehot=None)
    loss_generative = Glow.loss_generative(nll)
    loss = loss_generative
    graph.zero_grad()
    optim.zero_grad()
    loss.backward()
    optim.step()
    print(f"step {global_step}: loss {loss.item():.4f}")
