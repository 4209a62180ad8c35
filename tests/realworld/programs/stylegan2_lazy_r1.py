"""StyleGAN2 training loop with lazy regularization, reduced from rosinality/stylegan2-pytorch
(https://github.com/rosinality/stylegan2-pytorch, train.py + model.py).

A tiny mapping network + modulated-conv synthesis network (const input, noise injection, ToRGB skips) and a
residual discriminator with minibatch-stddev. Suspicious-but-correct patterns kept:
  - `requires_grad(generator, False)` / `requires_grad(discriminator, True)` toggled between the D and G
    phases (so the fake images of the D phase carry no graph into G);
  - lazy R1: every `d_reg_every` steps `real_img.requires_grad = True`, R1 computed with
    `autograd.grad(real_pred.sum(), real_img, create_graph=True)`, a second `discriminator.zero_grad()` +
    `d_optim.step()`, and the `+ 0 * real_pred[0]` term in the backward;
  - lazy path-length regularization every `g_reg_every` steps: `autograd.grad(..., latents, create_graph=True)`
    on a non-leaf latent, `path_lengths.detach()` in the running mean, `+ 0 * fake_img[0, 0, 0, 0]`;
  - `g_ema` is a separately built Generator, never in an optimizer, filled by `accumulate()` with
    `.data.mul_().add_()` (decay 0 at start) and only used under `torch.no_grad()` in eval mode;
  - NoiseInjection weights initialised to zero, Adam betas `(0 ** ratio, 0.99 ** ratio)` for the lazy ratio;
  - losses reduced under no_grad and logged with `.item()`.
"""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import autograd


def fused_leaky_relu(input, bias, negative_slope=0.2, scale=2 ** 0.5):
    # stand-in for the CUDA op `op.fused_act.fused_leaky_relu`
    rest_dim = [1] * (input.ndim - bias.ndim - 1)
    return F.leaky_relu(input + bias.view(1, bias.shape[0], *rest_dim), negative_slope) * scale


class PixelNorm(nn.Module):
    def forward(self, input):
        return input * torch.rsqrt(torch.mean(input ** 2, dim=1, keepdim=True) + 1e-8)


class EqualLinear(nn.Module):
    def __init__(self, in_dim, out_dim, bias=True, bias_init=0, lr_mul=1, activation=None):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_dim, in_dim).div_(lr_mul))
        self.bias = nn.Parameter(torch.zeros(out_dim).fill_(bias_init)) if bias else None
        self.activation = activation
        self.scale = (1 / math.sqrt(in_dim)) * lr_mul
        self.lr_mul = lr_mul

    def forward(self, input):
        if self.activation:
            out = F.linear(input, self.weight * self.scale)
            return fused_leaky_relu(out, self.bias * self.lr_mul)
        return F.linear(input, self.weight * self.scale, bias=self.bias * self.lr_mul)


class ModulatedConv2d(nn.Module):
    def __init__(self, in_channel, out_channel, kernel_size, style_dim, demodulate=True, upsample=False):
        super().__init__()
        self.eps = 1e-8
        self.kernel_size = kernel_size
        self.in_channel = in_channel
        self.out_channel = out_channel
        self.upsample = upsample
        self.scale = 1 / math.sqrt(in_channel * kernel_size ** 2)
        self.padding = kernel_size // 2
        self.weight = nn.Parameter(torch.randn(1, out_channel, in_channel, kernel_size, kernel_size))
        self.modulation = EqualLinear(style_dim, in_channel, bias_init=1)
        self.demodulate = demodulate

    def forward(self, input, style):
        batch, in_channel, height, width = input.shape
        style = self.modulation(style).view(batch, 1, in_channel, 1, 1)
        weight = self.scale * self.weight * style
        if self.demodulate:
            demod = torch.rsqrt(weight.pow(2).sum([2, 3, 4]) + 1e-8)
            weight = weight * demod.view(batch, self.out_channel, 1, 1, 1)
        weight = weight.view(batch * self.out_channel, in_channel, self.kernel_size, self.kernel_size)
        if self.upsample:
            # transposed conv + Blur in the original
            input = F.interpolate(input, scale_factor=2, mode="bilinear", align_corners=False)
            height, width = height * 2, width * 2
        input = input.view(1, batch * in_channel, height, width)
        out = F.conv2d(input, weight, padding=self.padding, groups=batch)
        _, _, height, width = out.shape
        return out.view(batch, self.out_channel, height, width)


class NoiseInjection(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(1))

    def forward(self, image, noise=None):
        if noise is None:
            batch, _, height, width = image.shape
            noise = image.new_empty(batch, 1, height, width).normal_()
        return image + self.weight * noise


class ConstantInput(nn.Module):
    def __init__(self, channel, size=4):
        super().__init__()
        self.input = nn.Parameter(torch.randn(1, channel, size, size))

    def forward(self, input):
        batch = input.shape[0]
        return self.input.repeat(batch, 1, 1, 1)


class StyledConv(nn.Module):
    def __init__(self, in_channel, out_channel, kernel_size, style_dim, upsample=False):
        super().__init__()
        self.conv = ModulatedConv2d(in_channel, out_channel, kernel_size, style_dim, upsample=upsample)
        self.noise = NoiseInjection()
        self.activate_bias = nn.Parameter(torch.zeros(out_channel))  # FusedLeakyReLU(out_channel).bias

    def forward(self, input, style, noise=None):
        out = self.conv(input, style)
        out = self.noise(out, noise=noise)
        return fused_leaky_relu(out, self.activate_bias)


class ToRGB(nn.Module):
    def __init__(self, in_channel, style_dim, upsample=True):
        super().__init__()
        self.upsample = upsample
        self.conv = ModulatedConv2d(in_channel, 1, 1, style_dim, demodulate=False)
        self.bias = nn.Parameter(torch.zeros(1, 1, 1, 1))

    def forward(self, input, style, skip=None):
        out = self.conv(input, style)
        out = out + self.bias
        if skip is not None:
            if self.upsample:
                skip = F.interpolate(skip, scale_factor=2, mode="bilinear", align_corners=False)
            out = out + skip
        return out


class Generator(nn.Module):
    def __init__(self, size=8, style_dim=16, n_mlp=2, channel=8, lr_mlp=0.01):
        super().__init__()
        self.style_dim = style_dim
        layers = [PixelNorm()]
        for _ in range(n_mlp):
            layers.append(EqualLinear(style_dim, style_dim, lr_mul=lr_mlp, activation="fused_lrelu"))
        self.style = nn.Sequential(*layers)
        self.input = ConstantInput(channel)
        self.conv1 = StyledConv(channel, channel, 3, style_dim)
        self.to_rgb1 = ToRGB(channel, style_dim, upsample=False)
        self.log_size = int(math.log(size, 2))
        self.convs = nn.ModuleList()
        self.to_rgbs = nn.ModuleList()
        for _ in range(3, self.log_size + 1):
            self.convs.append(StyledConv(channel, channel, 3, style_dim, upsample=True))
            self.convs.append(StyledConv(channel, channel, 3, style_dim))
            self.to_rgbs.append(ToRGB(channel, style_dim))
        self.n_latent = self.log_size * 2 - 2

    def forward(self, styles, return_latents=False):
        styles = [self.style(s) for s in styles]
        if len(styles) < 2:
            latent = styles[0].unsqueeze(1).repeat(1, self.n_latent, 1)
        else:
            inject_index = int(torch.randint(1, self.n_latent, ()).item())  # random.randint in the original
            latent = styles[0].unsqueeze(1).repeat(1, inject_index, 1)
            latent2 = styles[1].unsqueeze(1).repeat(1, self.n_latent - inject_index, 1)
            latent = torch.cat([latent, latent2], 1)

        out = self.input(latent)
        out = self.conv1(out, latent[:, 0])
        skip = self.to_rgb1(out, latent[:, 1])
        i = 1
        for conv1, conv2, to_rgb in zip(self.convs[::2], self.convs[1::2], self.to_rgbs):
            out = conv1(out, latent[:, i])
            out = conv2(out, latent[:, i + 1])
            skip = to_rgb(out, latent[:, i + 2], skip)
            i += 2
        image = skip
        if return_latents:
            return image, latent
        return image, None


class ConvLayer(nn.Sequential):
    def __init__(self, in_channel, out_channel, kernel_size, downsample=False, activate=True):
        layers = []
        if downsample:
            layers.append(nn.AvgPool2d(2))  # Blur + stride-2 conv in the original
        layers.append(nn.Conv2d(in_channel, out_channel, kernel_size, padding=kernel_size // 2, bias=not activate))
        if activate:
            layers.append(nn.LeakyReLU(0.2))
        super().__init__(*layers)


class DResBlock(nn.Module):
    def __init__(self, in_channel, out_channel):
        super().__init__()
        self.conv1 = ConvLayer(in_channel, in_channel, 3)
        self.conv2 = ConvLayer(in_channel, out_channel, 3, downsample=True)
        self.skip = ConvLayer(in_channel, out_channel, 1, downsample=True, activate=False)

    def forward(self, input):
        out = self.conv1(input)
        out = self.conv2(out)
        skip = self.skip(input)
        return (out + skip) / math.sqrt(2)


class Discriminator(nn.Module):
    def __init__(self, size=8, channel=8):
        super().__init__()
        self.convs = nn.Sequential(ConvLayer(1, channel, 1), DResBlock(channel, channel))
        self.stddev_group = 4
        self.stddev_feat = 1
        self.final_conv = ConvLayer(channel + 1, channel, 3)
        self.final_linear = nn.Sequential(
            EqualLinear(channel * (size // 2) ** 2, channel, activation="fused_lrelu"),
            EqualLinear(channel, 1),
        )

    def forward(self, input):
        out = self.convs(input)
        batch, channel, height, width = out.shape
        group = min(batch, self.stddev_group)
        stddev = out.view(group, -1, self.stddev_feat, channel // self.stddev_feat, height, width)
        stddev = torch.sqrt(stddev.var(0, unbiased=False) + 1e-8)
        stddev = stddev.mean([2, 3, 4], keepdim=True).squeeze(2)
        stddev = stddev.repeat(group, 1, height, width)
        out = torch.cat([out, stddev], 1)
        out = self.final_conv(out)
        out = out.view(batch, -1)
        return self.final_linear(out)


def requires_grad(model, flag=True):
    for p in model.parameters():
        p.requires_grad = flag


def accumulate(model1, model2, decay=0.999):
    par1 = dict(model1.named_parameters())
    par2 = dict(model2.named_parameters())
    for k in par1.keys():
        par1[k].data.mul_(decay).add_(par2[k].data, alpha=1 - decay)


def d_logistic_loss(real_pred, fake_pred):
    real_loss = F.softplus(-real_pred)
    fake_loss = F.softplus(fake_pred)
    return real_loss.mean() + fake_loss.mean()


def d_r1_loss(real_pred, real_img):
    grad_real, = autograd.grad(outputs=real_pred.sum(), inputs=real_img, create_graph=True)
    grad_penalty = grad_real.pow(2).reshape(grad_real.shape[0], -1).sum(1).mean()
    return grad_penalty


def g_nonsaturating_loss(fake_pred):
    return F.softplus(-fake_pred).mean()


def g_path_regularize(fake_img, latents, mean_path_length, decay=0.01):
    noise = torch.randn_like(fake_img) / math.sqrt(fake_img.shape[2] * fake_img.shape[3])
    grad, = autograd.grad(outputs=(fake_img * noise).sum(), inputs=latents, create_graph=True)
    path_lengths = torch.sqrt(grad.pow(2).sum(2).mean(1))
    path_mean = mean_path_length + decay * (path_lengths.mean() - mean_path_length)
    path_penalty = (path_lengths - path_mean).pow(2).mean()
    return path_penalty, path_mean.detach(), path_lengths


def make_noise(batch, latent_dim, n_noise):
    if n_noise == 1:
        return torch.randn(batch, latent_dim)
    return torch.randn(n_noise, batch, latent_dim).unbind(0)


def mixing_noise(batch, latent_dim, prob):
    if prob > 0 and torch.rand(()).item() < prob:
        return make_noise(batch, latent_dim, 2)
    return [make_noise(batch, latent_dim, 1)]


def reduce_loss_dict(loss_dict):
    # distributed.reduce_loss_dict stand-in (world size 1)
    with torch.no_grad():
        keys = sorted(loss_dict.keys())
        losses = torch.stack([loss_dict[k] for k in keys], 0)
        return {k: v for k, v in zip(keys, losses)}


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    batch, latent, size = 4, 16, 8
    r1, path_regularize, path_batch_shrink = 10.0, 2.0, 2
    d_reg_every, g_reg_every, mixing, lr = 4, 2, 0.9, 0.002

    generator = Generator(size, latent)
    discriminator = Discriminator(size)
    g_ema = Generator(size, latent)
    g_ema.eval()
    accumulate(g_ema, generator, 0)

    g_reg_ratio = g_reg_every / (g_reg_every + 1)
    d_reg_ratio = d_reg_every / (d_reg_every + 1)
    g_optim = torch.optim.Adam(generator.parameters(), lr=lr * g_reg_ratio,
                               betas=(0 ** g_reg_ratio, 0.99 ** g_reg_ratio))
    d_optim = torch.optim.Adam(discriminator.parameters(), lr=lr * d_reg_ratio,
                               betas=(0 ** d_reg_ratio, 0.99 ** d_reg_ratio))

    mean_path_length = 0
    r1_loss = torch.tensor(0.0)
    path_loss = torch.tensor(0.0)
    path_lengths = torch.tensor(0.0)
    mean_path_length_avg = 0
    loss_dict = {}
    accum = 0.5 ** (32 / (10 * 1000))
    sample_z = torch.randn(4, latent)

    for i in range(6):
        real_img = torch.rand(batch, 1, size, size) * 2 - 1

        requires_grad(generator, False)
        requires_grad(discriminator, True)

        noise = mixing_noise(batch, latent, mixing)
        fake_img, _ = generator(noise)
        fake_pred = discriminator(fake_img)
        real_pred = discriminator(real_img)
        d_loss = d_logistic_loss(real_pred, fake_pred)

        loss_dict["d"] = d_loss
        loss_dict["real_score"] = real_pred.mean()
        loss_dict["fake_score"] = fake_pred.mean()

        discriminator.zero_grad()
        d_loss.backward()
        d_optim.step()

        d_regularize = i % d_reg_every == 0
        if d_regularize:
            real_img.requires_grad = True
            real_pred = discriminator(real_img)
            r1_loss = d_r1_loss(real_pred, real_img)
            discriminator.zero_grad()
            (r1 / 2 * r1_loss * d_reg_every + 0 * real_pred[0]).backward()
            d_optim.step()
        loss_dict["r1"] = r1_loss

        requires_grad(generator, True)
        requires_grad(discriminator, False)

        noise = mixing_noise(batch, latent, mixing)
        fake_img, _ = generator(noise)
        fake_pred = discriminator(fake_img)
        g_loss = g_nonsaturating_loss(fake_pred)
        loss_dict["g"] = g_loss

        generator.zero_grad()
        g_loss.backward()
        g_optim.step()

        g_regularize = i % g_reg_every == 0
        if g_regularize:
            path_batch_size = max(1, batch // path_batch_shrink)
            noise = mixing_noise(path_batch_size, latent, mixing)
            fake_img, latents = generator(noise, return_latents=True)
            path_loss, mean_path_length, path_lengths = g_path_regularize(fake_img, latents, mean_path_length)
            generator.zero_grad()
            weighted_path_loss = path_regularize * g_reg_every * path_loss
            if path_batch_shrink:
                weighted_path_loss += 0 * fake_img[0, 0, 0, 0]
            weighted_path_loss.backward()
            g_optim.step()
            mean_path_length_avg = mean_path_length.item()  # reduce_sum(...).item() / world_size
        loss_dict["path"] = path_loss
        loss_dict["path_length"] = path_lengths.mean()

        accumulate(g_ema, generator, accum)

        loss_reduced = reduce_loss_dict(loss_dict)
        d_loss_val = loss_reduced["d"].mean().item()
        r1_val = loss_reduced["r1"].mean().item()
        path_loss_val = loss_reduced["path"].mean().item()
        _desc = f"d: {d_loss_val:.4f}; r1: {r1_val:.4f}; path: {path_loss_val:.4f}; mean path: {mean_path_length_avg:.4f}"

        if i % 2 == 0:
            with torch.no_grad():
                g_ema.eval()
                sample, _ = g_ema([sample_z])  # utils.save_image(sample, ...) in the original
        print(f"step {i} loss {g_loss.item():.6f}")

    if os.environ.get("REALWORLD_STATE"):
        torch.save({"g": generator.state_dict(), "d": discriminator.state_dict(), "g_ema": g_ema.state_dict()},
                   os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
