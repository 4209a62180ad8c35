# huggingface/diffusers research example train_autoencoderkl.py (PR #10605, fixed by PR #11113): the
# VAE of a latent diffusion model is trained with an adversarial term. Steps alternate between the VAE
# branch (backward + optimizer.step) and the discriminator branch, which computes disc_loss and logs
# it, but never runs backward on it nor steps disc_optimizer: the discriminator never changes.
import contextlib

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Accelerator:
    """Minimal stand-in for accelerate.Accelerator on one process, no accumulation."""
    sync_gradients = True

    def backward(self, loss):
        loss.backward()

    def accumulate(self, model):
        return contextlib.nullcontext()

    def unwrap_model(self, model):
        return model

    def clip_grad_norm_(self, params, max_norm):
        return torch.nn.utils.clip_grad_norm_(params, max_norm)


class DiagonalGaussian:
    def __init__(self, moments):
        self.mean, self.logvar = moments.chunk(2, dim=1)

    def sample(self):
        return self.mean + torch.exp(0.5 * self.logvar) * torch.randn_like(self.mean)

    def kl(self):
        return 0.5 * torch.sum(self.mean ** 2 + self.logvar.exp() - 1.0 - self.logvar, dim=[1, 2, 3])


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv_in = nn.ConvTranspose2d(4, 16, 4, 2, 1)
        self.conv_out = nn.Conv2d(16, 3, 3, padding=1)

    def forward(self, z):
        return self.conv_out(F.silu(self.conv_in(z)))


class AutoencoderKL(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(3, 16, 4, 2, 1), nn.SiLU(), nn.Conv2d(16, 8, 3, padding=1))
        self.decoder = Decoder()

    def encode(self, x):
        return DiagonalGaussian(self.encoder(x))

    def decode(self, z):
        return self.decoder(z)


def hinge_d_loss(logits_real, logits_fake):
    return 0.5 * (torch.mean(F.relu(1.0 - logits_real)) + torch.mean(F.relu(1.0 + logits_fake)))


accelerator = Accelerator()
vae = AutoencoderKL()
discriminator = nn.Sequential(nn.Conv2d(3, 16, 4, 2, 1), nn.LeakyReLU(0.2), nn.Conv2d(16, 1, 4, 1, 1))
optimizer = torch.optim.AdamW(vae.parameters(), lr=1e-4)
disc_optimizer = torch.optim.AdamW(discriminator.parameters(), lr=1e-4)
disc_start, disc_scale, disc_factor_arg, kl_scale = 0, 1.0, 1.0, 1e-6
disc_before = discriminator[0].weight.detach().clone()
data = torch.rand(8, 4, 3, 16, 16) * 2 - 1
global_step = 0

for step, targets in enumerate(data):
    posterior = accelerator.unwrap_model(vae).encode(targets)
    reconstructions = accelerator.unwrap_model(vae).decode(posterior.sample())
    if step % 2 == 0 or global_step < disc_start:
        with accelerator.accumulate(vae):
            nll_loss = torch.sum(F.l1_loss(reconstructions, targets, reduction="none")) / targets.shape[0]
            kl_loss = torch.sum(posterior.kl()) / targets.shape[0]
            g_loss = -torch.mean(discriminator(reconstructions))
            last_layer = accelerator.unwrap_model(vae).decoder.conv_out.weight
            nll_grads = torch.autograd.grad(nll_loss, last_layer, retain_graph=True)[0]
            g_grads = torch.autograd.grad(g_loss, last_layer, retain_graph=True)[0]
            disc_weight = torch.clamp(torch.norm(nll_grads) / (torch.norm(g_grads) + 1e-4), 0.0, 1e4).detach()
            disc_factor = disc_factor_arg if global_step >= disc_start else 0.0
            loss = nll_loss + kl_scale * kl_loss + disc_weight * disc_scale * disc_factor * g_loss
            logs = {"loss": loss.detach().mean().item(), "g_loss": g_loss.detach().mean().item()}
            accelerator.backward(loss)
            accelerator.clip_grad_norm_(vae.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()
    else:
        with accelerator.accumulate(discriminator):
            logits_real = discriminator(targets)
            logits_fake = discriminator(reconstructions)
            disc_factor = disc_factor_arg if global_step >= disc_start else 0.0
            disc_loss = disc_factor * hinge_d_loss(logits_real, logits_fake)  # <- no_update
            logs = {"disc_loss": disc_loss.detach().mean().item(), "logits_real": logits_real.detach().mean().item()}
    if accelerator.sync_gradients:
        global_step += 1
    print(step, logs)

changed = not torch.equal(disc_before, discriminator[0].weight)
print("discriminator weights changed during training:", changed)  # <- symptom
