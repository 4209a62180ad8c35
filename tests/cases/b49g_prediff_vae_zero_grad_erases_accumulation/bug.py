# "Timing to call .zero_grad()" -- gaozhihan/PreDiff issue #32 (fixed by PR #33 "Fix: gradient
# accumulation in VAE training")
# https://github.com/gaozhihan/PreDiff/issues/32
# scripts/vae/sevirlr/train_vae_sevirlr.py, VAESEVIRPLModule.training_step (manual optimization):
#     g_opt.zero_grad()
#     self.manual_backward(aeloss)
#     if (batch_idx + 1) % self.accumulate_grad_batches == 0:
#         ...; g_opt.step(); g_sch.step()
# zero_grad runs on every micro-batch, outside the IF, so it erases the gradients accumulated by
# the previous micro-batches: each optimizer step only sees the last micro-batch's gradient
# (same for d_opt / discloss). "Shouldn't we call it after .step() in IF condition? Otherwise the
# accumulated gradient in computation graphs will be erased." -- fixed in PR #33 by moving
# zero_grad() into the IF, after step().
# Miniature: Lightning replaced by a plain class with the same method names; tiny KL-VAE +
# hinge-loss discriminator (LPIPS term off); random "SEVIR" frames; CPU.
import torch
import torch.nn as nn
import torch.nn.functional as F
from types import SimpleNamespace

torch.manual_seed(0)


# ---------------- model ----------------
class DiagonalGaussianDistribution(object):
    def __init__(self, parameters):
        self.mean, self.logvar = torch.chunk(parameters, 2, dim=1)
        self.logvar = torch.clamp(self.logvar, -30.0, 20.0)
        self.std = torch.exp(0.5 * self.logvar)
        self.var = torch.exp(self.logvar)

    def sample(self):
        return self.mean + self.std * torch.randn(self.mean.shape)

    def kl(self):
        return 0.5 * torch.sum(self.mean ** 2 + self.var - 1.0 - self.logvar, dim=[1, 2, 3])


class Decoder(nn.Module):
    def __init__(self, latent_channels, out_channels):
        super().__init__()
        self.conv_in = nn.Conv2d(latent_channels, 16, 3, padding=1)
        self.up = nn.ConvTranspose2d(16, 16, 4, stride=2, padding=1)
        self.conv_out = nn.Conv2d(16, out_channels, 3, padding=1)

    def forward(self, z):
        return self.conv_out(F.silu(self.up(F.silu(self.conv_in(z)))))


class AutoencoderKL(nn.Module):
    def __init__(self, in_channels=1, out_channels=1, latent_channels=4):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(in_channels, 16, 3, padding=1), nn.SiLU(),
                                     nn.Conv2d(16, 2 * latent_channels, 4, stride=2, padding=1))
        self.quant_conv = nn.Conv2d(2 * latent_channels, 2 * latent_channels, 1)
        self.post_quant_conv = nn.Conv2d(latent_channels, latent_channels, 1)
        self.decoder = Decoder(latent_channels, out_channels)

    def forward(self, sample, sample_posterior=True, return_posterior=False):
        posterior = DiagonalGaussianDistribution(self.quant_conv(self.encoder(sample)))
        z = posterior.sample() if sample_posterior else posterior.mean
        dec = self.decoder(self.post_quant_conv(z))
        return (dec, posterior) if return_posterior else dec


class NLayerDiscriminator(nn.Module):
    def __init__(self, input_nc=1, ndf=8, n_layers=2):
        super().__init__()
        seq = [nn.Conv2d(input_nc, ndf, 4, 2, 1), nn.LeakyReLU(0.2, True)]
        seq += [nn.Conv2d(ndf, ndf * 2, 4, 2, 1), nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, True)]
        seq += [nn.Conv2d(ndf * 2, 1, 3, 1, 1)]
        self.main = nn.Sequential(*seq)

    def forward(self, x):
        return self.main(x)


def hinge_d_loss(logits_real, logits_fake):
    return 0.5 * (torch.mean(F.relu(1. - logits_real)) + torch.mean(F.relu(1. + logits_fake)))


def adopt_weight(weight, global_step, threshold=0, value=0.):
    return value if global_step < threshold else weight


class LPIPSWithDiscriminator(nn.Module):
    def __init__(self, disc_start, logvar_init=0.0, kl_weight=1e-6, disc_in_channels=1,
                 disc_factor=1.0, disc_weight=0.5, perceptual_weight=0.0):
        super().__init__()
        self.kl_weight = kl_weight
        self.perceptual_weight = perceptual_weight
        self.logvar = nn.Parameter(torch.ones(size=()) * logvar_init)
        self.discriminator = NLayerDiscriminator(input_nc=disc_in_channels)
        self.discriminator_iter_start = disc_start
        self.disc_factor = disc_factor
        self.discriminator_weight = disc_weight

    def calculate_adaptive_weight(self, nll_loss, g_loss, last_layer):
        nll_grads = torch.autograd.grad(nll_loss, last_layer, retain_graph=True)[0]
        g_grads = torch.autograd.grad(g_loss, last_layer, retain_graph=True)[0]
        d_weight = torch.norm(nll_grads) / (torch.norm(g_grads) + 1e-4)
        d_weight = torch.clamp(d_weight, 0.0, 1e4).detach()
        return d_weight * self.discriminator_weight

    def forward(self, inputs, reconstructions, posteriors, optimizer_idx, global_step,
                mask=None, last_layer=None, split="train"):
        rec_loss = torch.abs(inputs.contiguous() - reconstructions.contiguous())
        nll_loss = rec_loss / torch.exp(self.logvar) + self.logvar
        nll_loss = torch.sum(nll_loss) / nll_loss.shape[0]
        kl_loss = torch.sum(posteriors.kl()) / posteriors.kl().shape[0]
        disc_factor = adopt_weight(self.disc_factor, global_step, threshold=self.discriminator_iter_start)
        if optimizer_idx == 0:
            logits_fake = self.discriminator(reconstructions.contiguous())
            g_loss = -torch.mean(logits_fake)
            d_weight = self.calculate_adaptive_weight(nll_loss, g_loss, last_layer=last_layer)
            loss = nll_loss + self.kl_weight * kl_loss + d_weight * disc_factor * g_loss
            log = {f"{split}/rec_loss": float(rec_loss.mean()), f"{split}/total_loss": float(loss)}
            return loss, log
        if optimizer_idx == 1:
            logits_real = self.discriminator(inputs.contiguous().detach())
            logits_fake = self.discriminator(reconstructions.contiguous().detach())
            d_loss = disc_factor * hinge_d_loss(logits_real, logits_fake)
            log = {f"{split}/disc_loss": float(d_loss)}
            return d_loss, log


# ---------------- (Lightning-free) PL module ----------------
class VAESEVIRPLModule(nn.Module):
    def __init__(self, total_num_steps, accumulate_grad_batches, oc):
        super().__init__()
        self.oc = oc
        self.total_num_steps = total_num_steps
        self.accumulate_grad_batches = accumulate_grad_batches
        self.torch_nn_module = AutoencoderKL()
        self.loss = LPIPSWithDiscriminator(disc_start=oc.loss.disc_start, kl_weight=oc.loss.kl_weight)
        self.batch_axis = 0
        self.global_step = 0
        self._optimizers, self._schedulers = self.configure_optimizers()

    def configure_optimizers(self):
        lr = self.oc.optim.lr
        opt_ae = torch.optim.Adam(list(self.torch_nn_module.parameters()) + [self.loss.logvar], lr=lr, betas=(0.5, 0.9))
        opt_disc = torch.optim.Adam(self.loss.discriminator.parameters(), lr=lr, betas=(0.5, 0.9))
        sch_ae = torch.optim.lr_scheduler.LambdaLR(opt_ae, lambda step: 1.0)
        sch_disc = torch.optim.lr_scheduler.LambdaLR(opt_disc, lambda step: 1.0)
        return [opt_ae, opt_disc], [sch_ae, sch_disc]

    # Lightning API stand-ins
    def optimizers(self):
        return self._optimizers

    def lr_schedulers(self):
        return self._schedulers

    def manual_backward(self, loss):
        loss.backward()

    def clip_gradients(self, optimizer, gradient_clip_val, gradient_clip_algorithm="norm"):
        params = [p for g in optimizer.param_groups for p in g["params"]]
        torch.nn.utils.clip_grad_norm_(params, gradient_clip_val)

    def log(self, *args, **kwargs):
        pass

    def log_dict(self, *args, **kwargs):
        pass

    def get_last_layer(self):
        return self.torch_nn_module.decoder.conv_out.weight

    def get_input(self, batch):
        target_bchw = batch[:, 0].permute(0, 3, 1, 2).contiguous()  # "b 1 h w c -> b c h w"
        mask = None
        return target_bchw, mask

    def forward(self, target_bchw, sample_posterior=True):
        pred_bchw, posterior = self.torch_nn_module(
            sample=target_bchw,
            sample_posterior=sample_posterior,
            return_posterior=True)
        return pred_bchw, posterior

    def training_step(self, batch, batch_idx):
        g_opt, d_opt = self.optimizers()
        g_sch, d_sch = self.lr_schedulers()

        target_bchw, _ = self.get_input(batch=batch)
        pred_bchw, posterior = self(target_bchw)

        # train encoder+decoder+logvar
        aeloss, log_dict_ae = self.loss(target_bchw, pred_bchw, posterior, optimizer_idx=0, global_step=self.global_step,
                                        mask=None, last_layer=self.get_last_layer(), split="train")
        self.log("aeloss", aeloss, prog_bar=True, logger=True, on_step=True, on_epoch=True, sync_dist=False)
        self.log_dict(log_dict_ae, prog_bar=False, logger=True, on_step=True, on_epoch=False, sync_dist=False)
        g_opt.zero_grad()  # <- optimizer
        self.manual_backward(aeloss)
        if (batch_idx + 1) % self.accumulate_grad_batches == 0:
            self.clip_gradients(g_opt, gradient_clip_val=self.oc.optim.gradient_clip_val, gradient_clip_algorithm="norm")
            g_opt.step()
            g_sch.step()

        # train the discriminator
        discloss, log_dict_disc = self.loss(target_bchw, pred_bchw, posterior, optimizer_idx=1, global_step=self.global_step,
                                            mask=None, last_layer=self.get_last_layer(), split="train")
        self.log("discloss", discloss, prog_bar=True, logger=True, on_step=True, on_epoch=True, sync_dist=False)
        self.log_dict(log_dict_disc, prog_bar=False, logger=True, on_step=True, on_epoch=False, sync_dist=False)

        d_opt.zero_grad()
        self.manual_backward(discloss)
        if (batch_idx + 1) % self.accumulate_grad_batches == 0:
            self.clip_gradients(d_opt, gradient_clip_val=self.oc.optim.gradient_clip_val, gradient_clip_algorithm="norm")
            d_opt.step()
            d_sch.step()
        return aeloss


oc = SimpleNamespace(optim=SimpleNamespace(lr=1e-3, gradient_clip_val=1.0),
                     loss=SimpleNamespace(disc_start=0, kl_weight=1e-6))
micro_batch_size, total_batch_size = 2, 4
accumulate_grad_batches = total_batch_size // micro_batch_size
pl_module = VAESEVIRPLModule(total_num_steps=4, accumulate_grad_batches=accumulate_grad_batches, oc=oc)
batches = [torch.rand(micro_batch_size, 1, 16, 16, 1) for _ in range(8)]  # (b, 1, h, w, c)

for batch_idx, batch in enumerate(batches):
    aeloss = pl_module.training_step(batch, batch_idx)
    if (batch_idx + 1) % accumulate_grad_batches == 0:
        pl_module.global_step += 1
        print("step", pl_module.global_step, "aeloss %.4f" % aeloss.item())
