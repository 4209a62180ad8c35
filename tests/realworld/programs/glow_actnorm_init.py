"""Glow (multi-scale flow: ActNorm, LU-decomposed invertible 1x1 conv, affine coupling, learned split priors),
reduced from rosinality/glow-pytorch (https://github.com/rosinality/glow-pytorch, model.py + train.py).

Suspicious-but-correct patterns kept:
  - data-dependent ActNorm init: the very first batch is pushed through the model under `torch.no_grad()`
    and the loop `continue`s without a backward; `ActNorm.initialize` writes the parameters with
    `self.loc.data.copy_(-mean)` / `self.scale.data.copy_(1 / (std + 1e-6))` and flips a uint8 buffer
    checked with `self.initialized.item()` on every forward;
  - InvConv2dLU keeps the permutation, masks, sign and identity as buffers and learns only `w_l`, `w_s`
    (log|diag|) and `w_u`; the log-determinant is `height * width * sum(self.w_s)`;
  - ZeroConv2d starts with weight, bias and `scale` zeroed (`.data.zero_()`), so the coupling nets receive
    gradient only once the zero convs have moved (after the first optimizer step);
  - ReLU(inplace=True) inside the coupling net, the lr set by hand in `optimizer.param_groups[0]["lr"]`,
    `model.zero_grad()`, sampling with `model.reverse(z_sample)` under no_grad and `.item()` logging.
(scipy.linalg.qr / lu of the original are replaced by torch.linalg.qr / lu.)
"""
import os
from math import log, pi

import torch
import torch.nn as nn
import torch.nn.functional as F

logabs = lambda x: torch.log(torch.abs(x))


class ActNorm(nn.Module):
    def __init__(self, in_channel, logdet=True):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(1, in_channel, 1, 1))
        self.scale = nn.Parameter(torch.ones(1, in_channel, 1, 1))
        self.register_buffer("initialized", torch.tensor(0, dtype=torch.uint8))
        self.logdet = logdet

    def initialize(self, input):
        with torch.no_grad():
            flatten = input.permute(1, 0, 2, 3).contiguous().view(input.shape[1], -1)
            mean = flatten.mean(1).unsqueeze(1).unsqueeze(2).unsqueeze(3).permute(1, 0, 2, 3)
            std = flatten.std(1).unsqueeze(1).unsqueeze(2).unsqueeze(3).permute(1, 0, 2, 3)
            self.loc.data.copy_(-mean)
            self.scale.data.copy_(1 / (std + 1e-6))

    def forward(self, input):
        _, _, height, width = input.shape
        if self.initialized.item() == 0:
            self.initialize(input)
            self.initialized.fill_(1)
        log_abs = logabs(self.scale)
        logdet = height * width * torch.sum(log_abs)
        if self.logdet:
            return self.scale * (input + self.loc), logdet
        return self.scale * (input + self.loc)

    def reverse(self, output):
        return output / self.scale - self.loc


class InvConv2dLU(nn.Module):
    def __init__(self, in_channel):
        super().__init__()
        weight = torch.randn(in_channel, in_channel)
        q, _ = torch.linalg.qr(weight)
        w_p, w_l, w_u = torch.linalg.lu(q)
        w_s = torch.diag(w_u)
        w_u = torch.triu(w_u, 1)
        u_mask = torch.triu(torch.ones_like(w_u), 1)
        l_mask = u_mask.T.contiguous()

        self.register_buffer("w_p", w_p)
        self.register_buffer("u_mask", u_mask)
        self.register_buffer("l_mask", l_mask)
        self.register_buffer("s_sign", torch.sign(w_s))
        self.register_buffer("l_eye", torch.eye(l_mask.shape[0]))
        self.w_l = nn.Parameter(w_l)
        self.w_s = nn.Parameter(logabs(w_s))
        self.w_u = nn.Parameter(w_u)

    def forward(self, input):
        _, _, height, width = input.shape
        weight = self.calc_weight()
        out = F.conv2d(input, weight)
        logdet = height * width * sum(self.w_s)
        return out, logdet

    def calc_weight(self):
        weight = (
            self.w_p
            @ (self.w_l * self.l_mask + self.l_eye)
            @ ((self.w_u * self.u_mask) + torch.diag(self.s_sign * torch.exp(self.w_s)))
        )
        return weight.unsqueeze(2).unsqueeze(3)

    def reverse(self, output):
        weight = self.calc_weight()
        return F.conv2d(output, weight.squeeze().inverse().unsqueeze(2).unsqueeze(3))


class ZeroConv2d(nn.Module):
    def __init__(self, in_channel, out_channel, padding=1):
        super().__init__()
        self.conv = nn.Conv2d(in_channel, out_channel, 3, padding=0)
        self.conv.weight.data.zero_()
        self.conv.bias.data.zero_()
        self.scale = nn.Parameter(torch.zeros(1, out_channel, 1, 1))

    def forward(self, input):
        out = F.pad(input, [1, 1, 1, 1], value=1)
        out = self.conv(out)
        out = out * torch.exp(self.scale * 3)
        return out


class AffineCoupling(nn.Module):
    def __init__(self, in_channel, filter_size=16, affine=True):
        super().__init__()
        self.affine = affine
        self.net = nn.Sequential(
            nn.Conv2d(in_channel // 2, filter_size, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(filter_size, filter_size, 1),
            nn.ReLU(inplace=True),
            ZeroConv2d(filter_size, in_channel if self.affine else in_channel // 2),
        )
        self.net[0].weight.data.normal_(0, 0.05)
        self.net[0].bias.data.zero_()
        self.net[2].weight.data.normal_(0, 0.05)
        self.net[2].bias.data.zero_()

    def forward(self, input):
        in_a, in_b = input.chunk(2, 1)
        if self.affine:
            log_s, t = self.net(in_a).chunk(2, 1)
            s = torch.sigmoid(log_s + 2)
            out_b = (in_b + t) * s
            logdet = torch.sum(torch.log(s).view(input.shape[0], -1), 1)
        else:
            net_out = self.net(in_a)
            out_b = in_b + net_out
            logdet = None
        return torch.cat([in_a, out_b], 1), logdet

    def reverse(self, output):
        out_a, out_b = output.chunk(2, 1)
        if self.affine:
            log_s, t = self.net(out_a).chunk(2, 1)
            s = torch.sigmoid(log_s + 2)
            in_b = out_b / s - t
        else:
            in_b = out_b - self.net(out_a)
        return torch.cat([out_a, in_b], 1)


class Flow(nn.Module):
    def __init__(self, in_channel, affine=True):
        super().__init__()
        self.actnorm = ActNorm(in_channel)
        self.invconv = InvConv2dLU(in_channel)
        self.coupling = AffineCoupling(in_channel, affine=affine)

    def forward(self, input):
        out, logdet = self.actnorm(input)
        out, det1 = self.invconv(out)
        out, det2 = self.coupling(out)
        logdet = logdet + det1
        if det2 is not None:
            logdet = logdet + det2
        return out, logdet

    def reverse(self, output):
        input = self.coupling.reverse(output)
        input = self.invconv.reverse(input)
        return self.actnorm.reverse(input)


def gaussian_log_p(x, mean, log_sd):
    return -0.5 * log(2 * pi) - log_sd - 0.5 * (x - mean) ** 2 / torch.exp(2 * log_sd)


def gaussian_sample(eps, mean, log_sd):
    return mean + torch.exp(log_sd) * eps


class Block(nn.Module):
    def __init__(self, in_channel, n_flow, split=True, affine=True):
        super().__init__()
        squeeze_dim = in_channel * 4
        self.flows = nn.ModuleList([Flow(squeeze_dim, affine=affine) for _ in range(n_flow)])
        self.split = split
        if split:
            self.prior = ZeroConv2d(in_channel * 2, in_channel * 4)
        else:
            self.prior = ZeroConv2d(in_channel * 4, in_channel * 8)

    def forward(self, input):
        b_size, n_channel, height, width = input.shape
        squeezed = input.view(b_size, n_channel, height // 2, 2, width // 2, 2)
        squeezed = squeezed.permute(0, 1, 3, 5, 2, 4)
        out = squeezed.contiguous().view(b_size, n_channel * 4, height // 2, width // 2)
        logdet = 0
        for flow in self.flows:
            out, det = flow(out)
            logdet = logdet + det
        if self.split:
            out, z_new = out.chunk(2, 1)
            mean, log_sd = self.prior(out).chunk(2, 1)
            log_p = gaussian_log_p(z_new, mean, log_sd)
            log_p = log_p.view(b_size, -1).sum(1)
        else:
            zero = torch.zeros_like(out)
            mean, log_sd = self.prior(zero).chunk(2, 1)
            log_p = gaussian_log_p(out, mean, log_sd)
            log_p = log_p.view(b_size, -1).sum(1)
            z_new = out
        return out, logdet, log_p, z_new

    def reverse(self, output, eps=None):
        input = output
        if self.split:
            mean, log_sd = self.prior(input).chunk(2, 1)
            z = gaussian_sample(eps, mean, log_sd)
            input = torch.cat([output, z], 1)
        else:
            zero = torch.zeros_like(input)
            mean, log_sd = self.prior(zero).chunk(2, 1)
            input = gaussian_sample(eps, mean, log_sd)
        for flow in self.flows[::-1]:
            input = flow.reverse(input)
        b_size, n_channel, height, width = input.shape
        unsqueezed = input.view(b_size, n_channel // 4, 2, 2, height, width)
        unsqueezed = unsqueezed.permute(0, 1, 4, 2, 5, 3)
        return unsqueezed.contiguous().view(b_size, n_channel // 4, height * 2, width * 2)


class Glow(nn.Module):
    def __init__(self, in_channel, n_flow, n_block, affine=True):
        super().__init__()
        self.blocks = nn.ModuleList()
        n_channel = in_channel
        for _ in range(n_block - 1):
            self.blocks.append(Block(n_channel, n_flow, affine=affine))
            n_channel *= 2
        self.blocks.append(Block(n_channel, n_flow, split=False, affine=affine))

    def forward(self, input):
        log_p_sum = 0
        logdet = 0
        out = input
        z_outs = []
        for block in self.blocks:
            out, det, log_p, z_new = block(out)
            z_outs.append(z_new)
            logdet = logdet + det
            if log_p is not None:
                log_p_sum = log_p_sum + log_p
        return log_p_sum, logdet, z_outs

    def reverse(self, z_list):
        for i, block in enumerate(self.blocks[::-1]):
            if i == 0:
                input = block.reverse(z_list[-1], z_list[-1])
            else:
                input = block.reverse(input, z_list[-(i + 1)])
        return input


def calc_z_shapes(n_channel, input_size, n_flow, n_block):
    z_shapes = []
    for _ in range(n_block - 1):
        input_size //= 2
        n_channel *= 2
        z_shapes.append((n_channel, input_size, input_size))
    input_size //= 2
    z_shapes.append((n_channel * 4, input_size, input_size))
    return z_shapes


def calc_loss(log_p, logdet, image_size, n_bins):
    n_pixel = image_size * image_size * 3
    loss = -log(n_bins) * n_pixel
    loss = loss + logdet + log_p
    return (
        (-loss / (log(2) * n_pixel)).mean(),
        (log_p / (log(2) * n_pixel)).mean(),
        (logdet / (log(2) * n_pixel)).mean(),
    )


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    img_size, n_flow, n_block, n_bits, lr, temp = 8, 2, 2, 5, 1e-3, 0.7
    model_single = Glow(3, n_flow, n_block, affine=True)
    model = model_single  # nn.DataParallel(model_single) in the original
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    n_bins = 2.0 ** n_bits

    z_sample = []
    for z in calc_z_shapes(3, img_size, n_flow, n_block):
        z_sample.append(torch.randn(2, *z) * temp)

    for i in range(6):
        image = torch.rand(8, 3, img_size, img_size)
        image = image * 255
        if n_bits < 8:
            image = torch.floor(image / 2 ** (8 - n_bits))
        image = image / n_bins - 0.5

        if i == 0:
            with torch.no_grad():
                log_p, logdet, _ = model(image + torch.rand_like(image) / n_bins)
                continue
        else:
            log_p, logdet, _ = model(image + torch.rand_like(image) / n_bins)

        logdet = logdet.mean()
        loss, log_p, log_det = calc_loss(log_p, logdet, img_size, n_bins)
        model.zero_grad()
        loss.backward()
        warmup_lr = lr
        optimizer.param_groups[0]["lr"] = warmup_lr
        optimizer.step()
        _desc = f"Loss: {loss.item():.5f}; logP: {log_p.item():.5f}; logdet: {log_det.item():.5f}; lr: {warmup_lr:.7f}"
        print(f"step {i} loss {loss.item():.6f}")

        if i % 3 == 0:
            with torch.no_grad():
                _sample = model_single.reverse(z_sample).cpu().data  # utils.save_image(...) in the original

    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model_single.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
