"""DALL-E discrete VAE (Gumbel-softmax relaxation over a learned codebook), reduced from
lucidrains/DALLE-pytorch (https://github.com/lucidrains/DALLE-pytorch, dalle_pytorch/vae.py `DiscreteVAE`
and train_vae.py). einops `rearrange` / `einsum` are written with torch ops.

Suspicious-but-correct patterns kept:
  - the codebook is only reached through `torch.einsum('b n h w, n d -> b d h w', soft_one_hot,
    self.codebook.weight)` (the embedding module is never called in the training forward);
  - `F.gumbel_softmax(logits, tau=temp, dim=1, hard=self.straight_through)` with a temperature annealed in
    Python (`temp = max(temp * math.exp(-ANNEAL_RATE * global_step), TEMP_MIN)`);
  - input normalisation on a clone with in-place `images.sub_(means).div_(stds)`;
  - KL-to-uniform term computed every step but weighted by `kl_div_loss_weight = 0` (train_vae default);
  - `get_codebook_indices` is `@torch.no_grad()` + `@eval_decorator` (eval then restore train mode) and the
    hard reconstruction `vae.decode(codes)` runs under no_grad; logged tensors go through
    `.detach().cpu()`; ExponentialLR stepped only every few iterations; loss printed with `.item()`.
"""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


def exists(val):
    return val is not None


def default(val, d):
    return val if exists(val) else d


def eval_decorator(fn):
    def inner(model, *args, **kwargs):
        was_training = model.training
        model.eval()
        out = fn(model, *args, **kwargs)
        model.train(was_training)
        return out
    return inner


class ResBlock(nn.Module):
    def __init__(self, chan):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(chan, chan, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(chan, chan, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(chan, chan, 1),
        )

    def forward(self, x):
        return self.net(x) + x


class DiscreteVAE(nn.Module):
    def __init__(self, image_size=16, num_tokens=32, codebook_dim=16, num_layers=2, num_resnet_blocks=1,
                 hidden_dim=16, channels=3, smooth_l1_loss=False, temperature=0.9, straight_through=False,
                 kl_div_loss_weight=0., normalization=((0.5,) * 3, (0.5,) * 3)):
        super().__init__()
        has_resblocks = num_resnet_blocks > 0
        self.image_size = image_size
        self.num_tokens = num_tokens
        self.num_layers = num_layers
        self.temperature = temperature
        self.straight_through = straight_through
        self.codebook = nn.Embedding(num_tokens, codebook_dim)

        enc_chans = [hidden_dim] * num_layers
        dec_chans = list(reversed(enc_chans))
        enc_chans = [channels, *enc_chans]
        dec_init_chan = codebook_dim if not has_resblocks else dec_chans[0]
        dec_chans = [dec_init_chan, *dec_chans]
        enc_chans_io, dec_chans_io = map(lambda t: list(zip(t[:-1], t[1:])), (enc_chans, dec_chans))

        enc_layers = []
        dec_layers = []
        for (enc_in, enc_out), (dec_in, dec_out) in zip(enc_chans_io, dec_chans_io):
            enc_layers.append(nn.Sequential(nn.Conv2d(enc_in, enc_out, 4, stride=2, padding=1), nn.ReLU()))
            dec_layers.append(nn.Sequential(nn.ConvTranspose2d(dec_in, dec_out, 4, stride=2, padding=1), nn.ReLU()))
        for _ in range(num_resnet_blocks):
            dec_layers.insert(0, ResBlock(dec_chans[1]))
            enc_layers.append(ResBlock(enc_chans[-1]))
        if num_resnet_blocks > 0:
            dec_layers.insert(0, nn.Conv2d(codebook_dim, dec_chans[1], 1))
        enc_layers.append(nn.Conv2d(enc_chans[-1], num_tokens, 1))
        dec_layers.append(nn.Conv2d(dec_chans[-1], channels, 1))

        self.encoder = nn.Sequential(*enc_layers)
        self.decoder = nn.Sequential(*dec_layers)
        self.loss_fn = F.smooth_l1_loss if smooth_l1_loss else F.mse_loss
        self.kl_div_loss_weight = kl_div_loss_weight
        self.normalization = normalization

    def norm(self, images):
        if not exists(self.normalization):
            return images
        means, stds = map(lambda t: torch.as_tensor(t).to(images), self.normalization)
        means, stds = map(lambda t: t.view(1, -1, 1, 1), (means, stds))  # rearrange 'c -> () c () ()'
        images = images.clone()
        images.sub_(means).div_(stds)
        return images

    @torch.no_grad()
    @eval_decorator
    def get_codebook_indices(self, images):
        logits = self(images, return_logits=True)
        codebook_indices = logits.argmax(dim=1).flatten(1)
        return codebook_indices

    def decode(self, img_seq):
        image_embeds = self.codebook(img_seq)
        b, n, d = image_embeds.shape
        h = w = int(math.sqrt(n))
        image_embeds = image_embeds.view(b, h, w, d).permute(0, 3, 1, 2)  # 'b (h w) d -> b d h w'
        return self.decoder(image_embeds)

    def forward(self, img, return_loss=False, return_recons=False, return_logits=False, temp=None):
        num_tokens, kl_div_loss_weight = self.num_tokens, self.kl_div_loss_weight
        img = self.norm(img)
        logits = self.encoder(img)
        if return_logits:
            return logits

        temp = default(temp, self.temperature)
        soft_one_hot = F.gumbel_softmax(logits, tau=temp, dim=1, hard=self.straight_through)
        sampled = torch.einsum("b n h w, n d -> b d h w", soft_one_hot, self.codebook.weight)
        out = self.decoder(sampled)
        if not return_loss:
            return out

        recon_loss = self.loss_fn(img, out)
        logits = logits.flatten(2).transpose(1, 2)  # 'b n h w -> b (h w) n'
        log_qy = F.log_softmax(logits, dim=-1)
        log_uniform = torch.log(torch.tensor([1. / num_tokens]))
        kl_div = F.kl_div(log_uniform, log_qy, None, None, "batchmean", log_target=True)
        loss = recon_loss + (kl_div * kl_div_loss_weight)
        if not return_recons:
            return loss
        return loss, out


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    LEARNING_RATE, LR_DECAY_RATE = 1e-3, 0.98
    STARTING_TEMP, TEMP_MIN, ANNEAL_RATE = 1., 0.5, 1e-6
    NUM_IMAGES_SAVE = 2
    vae_params = dict(image_size=16, num_layers=2, num_tokens=32, codebook_dim=16, hidden_dim=16,
                      num_resnet_blocks=1)
    vae = DiscreteVAE(**vae_params, smooth_l1_loss=False, kl_div_loss_weight=0.)
    opt = torch.optim.Adam(vae.parameters(), lr=LEARNING_RATE)
    sched = torch.optim.lr_scheduler.ExponentialLR(optimizer=opt, gamma=LR_DECAY_RATE)

    global_step = 0
    temp = STARTING_TEMP
    for i in range(6):
        images = torch.rand(4, 3, 16, 16)
        loss, recons = vae(images, return_loss=True, return_recons=True, temp=temp)
        opt.zero_grad()
        loss.backward()
        opt.step()

        logs = {}
        if i % 2 == 0:
            k = NUM_IMAGES_SAVE
            with torch.no_grad():
                codes = vae.get_codebook_indices(images[:k])
                hard_recons = vae.decode(codes)
            images, recons = map(lambda t: t[:k], (images, recons))
            images, recons, hard_recons, codes = map(lambda t: t.detach().cpu(), (images, recons, hard_recons, codes))
            logs = {**logs, "codebook_indices": codes, "temperature": temp}  # wandb.Image / Histogram
            # temperature anneal
            temp = max(temp * math.exp(-ANNEAL_RATE * global_step), TEMP_MIN)
            # lr decay
            sched.step()

        lr = sched.get_last_lr()[0]
        logs = {**logs, "iter": i, "loss": loss.item(), "lr": lr}
        print(f"step {i} loss {loss.item():.6f}")
        global_step += 1

    if os.environ.get("REALWORLD_STATE"):
        torch.save({"vae": vae.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
