# fix: Fixed the `sdp_dur_loss` to lose its gradient.
# https://github.com/openvpi/DiffSinger/pull/303
# What went wrong: with use_sdp enabled, the duration loss of the
# StochasticDurationPredictor was computed on durations that went through
# torch.ceil. ceil has a zero derivative everywhere, so sdp_dur_loss carried no
# gradient back into the SDP: its weights got all-zero .grad and never learned.
# Fix (PR #303): drop the torch.ceil on the training path; the loss is taken on
# the continuous (un-rounded) duration, rounding stays for inference only.
import math
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)


class Log(nn.Module):
    def forward(self, x, x_mask, reverse=False, **kwargs):
        if not reverse:
            y = torch.log(torch.clamp_min(x, 0) + 1.0) * x_mask
            return y, torch.sum(-y, [1, 2])
        return (torch.exp(x) - 1.0) * x_mask


class ElementwiseAffine(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.m = nn.Parameter(torch.zeros(channels, 1))
        self.logs = nn.Parameter(torch.zeros(channels, 1))

    def forward(self, x, x_mask, reverse=False, **kwargs):
        if not reverse:
            y = (self.m + torch.exp(self.logs) * x) * x_mask
            return y, torch.sum(self.logs * x_mask, [1, 2])
        return (x - self.m) * torch.exp(-self.logs) * x_mask


class Flip(nn.Module):
    def forward(self, x, *args, reverse=False, **kwargs):
        x = torch.flip(x, [1])
        if not reverse:
            return x, torch.zeros(x.size(0), dtype=x.dtype)
        return x


class DDSConv(nn.Module):
    def __init__(self, channels, kernel_size, n_layers):
        super().__init__()
        self.n_layers = n_layers
        self.convs_sep = nn.ModuleList()
        self.convs_1x1 = nn.ModuleList()
        for i in range(n_layers):
            dilation = kernel_size ** i
            padding = (kernel_size * dilation - dilation) // 2
            self.convs_sep.append(nn.Conv1d(channels, channels, kernel_size, groups=channels,
                                            dilation=dilation, padding=padding))
            self.convs_1x1.append(nn.Conv1d(channels, channels, 1))

    def forward(self, x, x_mask, g=None):
        if g is not None:
            x = x + g
        for i in range(self.n_layers):
            y = F.gelu(self.convs_sep[i](x * x_mask))
            y = F.gelu(self.convs_1x1[i](y))
            x = x + y
        return x * x_mask


class ConvFlow(nn.Module):
    # affine coupling (the project uses a rational-quadratic spline coupling)
    def __init__(self, in_channels, filter_channels, kernel_size, n_layers):
        super().__init__()
        self.half_channels = in_channels // 2
        self.pre = nn.Conv1d(self.half_channels, filter_channels, 1)
        self.convs = DDSConv(filter_channels, kernel_size, n_layers)
        self.proj = nn.Conv1d(filter_channels, self.half_channels * 2, 1)

    def forward(self, x, x_mask, g=None, reverse=False):
        x0, x1 = torch.split(x, [self.half_channels] * 2, 1)
        h = self.proj(self.convs(self.pre(x0), x_mask, g=g)) * x_mask
        m, logs = torch.split(h, [self.half_channels] * 2, 1)
        logs = torch.tanh(logs)
        if not reverse:
            x1 = (m + x1 * torch.exp(logs)) * x_mask
            return torch.cat([x0, x1], 1), torch.sum(logs * x_mask, [1, 2])
        x1 = (x1 - m) * torch.exp(-logs) * x_mask
        return torch.cat([x0, x1], 1)


class StochasticDurationPredictor(nn.Module):
    def __init__(self, in_channels, kernel_size=3, n_flows=2):
        super().__init__()
        filter_channels = in_channels
        self.log_flow = Log()
        self.flows = nn.ModuleList([ElementwiseAffine(2)])
        for _ in range(n_flows):
            self.flows.append(ConvFlow(2, filter_channels, kernel_size, n_layers=2))
            self.flows.append(Flip())
        self.pre = nn.Conv1d(in_channels, filter_channels, 1)
        self.proj = nn.Conv1d(filter_channels, filter_channels, 1)
        self.convs = DDSConv(filter_channels, kernel_size, n_layers=2)

    def forward(self, x, x_mask, reverse=True, noise_scale=1.0):
        x = torch.detach(x)
        x = self.pre(x)
        x = self.convs(x, x_mask)
        x = self.proj(x) * x_mask
        flows = list(reversed(self.flows))
        z = torch.randn(x.size(0), 2, x.size(2)) * noise_scale
        for flow in flows:
            z = flow(z, x_mask, g=x, reverse=True)
        z0, z1 = torch.split(z, [1, 1], 1)
        return z0  # logw


class DurationPredictor(nn.Module):
    def __init__(self, in_dims):
        super().__init__()
        self.sdp = StochasticDurationPredictor(in_dims)

    def forward(self, encoder_out, x_mask):
        logw = self.sdp(encoder_out.transpose(1, 2), x_mask)
        dur_pred = self.sdp.log_flow(logw, x_mask, reverse=True)   # linear domain
        dur_pred = torch.ceil(dur_pred)  # <- non_differentiable
        return dur_pred.squeeze(1)


class DurationLoss(nn.Module):
    def __init__(self, offset=1.0):
        super().__init__()
        self.offset = offset
        self.loss = nn.MSELoss()

    def forward(self, dur_pred, dur_gt):
        return self.loss(torch.log(dur_pred.clamp_min(0) + self.offset),
                         torch.log(dur_gt + self.offset))


B, T, C = 2, 7, 8
encoder_out = torch.randn(B, T, C, requires_grad=True)
x_mask = torch.ones(B, 1, T)
ph_dur = torch.randint(1, 12, (B, T)).float()

model = DurationPredictor(C)
criterion = DurationLoss()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

for step in range(3):
    optimizer.zero_grad()
    dur_pred = model(encoder_out, x_mask)
    sdp_dur_loss = criterion(dur_pred, ph_dur)
    sdp_dur_loss.backward()
    g = model.sdp.pre.weight.grad
    print(f"step {step}: sdp_dur_loss={sdp_dur_loss.item():.4f} "
          f"|grad sdp.pre.weight|={g.abs().sum().item():.6f}")
    optimizer.step()
