"""audiolm-pytorch (lucidrains/audiolm-pytorch) issue #48 "Some clarifications and potential bug?",
https://github.com/lucidrains/audiolm-pytorch/issues/48: SoundStream got local-attention blocks after the
encoder and before the decoder (`encoder_attn`, `decoder_attn`), but `SoundStream.non_discr_parameters()`,
which the trainer hands to the generator's optimizer, still returned only the encoder's and the decoder's
parameters. The reporter noticed the attention parameters were never optimised; the maintainer confirmed
("omg, thank you") and added them to the list.
At run time the attention blocks sit on the generator's gradient path, so their weights do get a gradient
from every generator backward, but no optimizer holds them: they never change (and their .grad just keeps
accumulating, since only the optimizer's own parameters are zeroed).
Fix: return the attention blocks' parameters from non_discr_parameters() too (same line here). The issue's
second point (zero the discriminator's grads before its backward) is already applied in both scripts.
local_attention (LocalMHA, FeedForward) and vector_quantize_pytorch (ResidualVQ, EMA codebooks with a
straight-through estimator) are short stand-ins; the model is shrunk to a few channels and one discriminator."""
import torch
from torch import nn
import torch.nn.functional as F

torch.set_num_threads(1)


def exists(val):
    return val is not None


def hinge_discr_loss(fake, real):
    return (F.relu(1 + fake) + F.relu(1 - real)).mean()


def hinge_gen_loss(fake):
    return -fake.mean()


# --- local_attention stand-in -------------------------------------------------------------------
class LocalMHA(nn.Module):
    def __init__(self, dim, dim_head=8, heads=2, window_size=16, prenorm=True, causal=True):
        super().__init__()
        self.heads = heads
        self.norm = nn.LayerNorm(dim) if prenorm else nn.Identity()
        self.to_qkv = nn.Linear(dim, dim_head * heads * 3, bias=False)
        self.to_out = nn.Linear(dim_head * heads, dim, bias=False)
        self.causal = causal

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.to_qkv(self.norm(x)).chunk(3, dim=-1)
        q, k, v = (t.reshape(b, n, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        return self.to_out(out.transpose(1, 2).reshape(b, n, -1))


class FeedForward(nn.Module):
    def __init__(self, dim, mult=2):
        super().__init__()
        self.net = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim * mult), nn.GELU(), nn.Linear(dim * mult, dim))

    def forward(self, x):
        return self.net(x)


# --- vector_quantize_pytorch stand-in (EMA codebooks: buffers, no trainable parameters) ---------
class ResidualVQ(nn.Module):
    def __init__(self, dim, num_quantizers=2, codebook_size=16, commitment_weight=1.):
        super().__init__()
        self.register_buffer("codebooks", torch.randn(num_quantizers, codebook_size, dim))
        self.commitment_weight = commitment_weight

    def forward(self, x):
        quantized_out, residual, all_indices, commit_loss = 0., x, [], 0.
        for codebook in self.codebooks:
            indices = torch.cdist(residual, codebook.expand(residual.shape[0], -1, -1)).argmin(dim=-1)
            quantize = codebook[indices]
            commit_loss = commit_loss + F.mse_loss(quantize, residual) * self.commitment_weight
            quantize = residual + (quantize - residual).detach()  # straight-through
            quantized_out = quantized_out + quantize
            residual = residual - quantize.detach()
            all_indices.append(indices)
        return quantized_out, torch.stack(all_indices, dim=-1), commit_loss


# --- audiolm_pytorch/soundstream.py, in short ------------------------------------------------------
class CausalConv1d(nn.Module):
    def __init__(self, chan_in, chan_out, kernel_size, **kwargs):
        super().__init__()
        dilation = kwargs.get('dilation', 1)
        self.causal_padding = dilation * (kernel_size - 1)
        self.conv = nn.Conv1d(chan_in, chan_out, kernel_size, **kwargs)

    def forward(self, x):
        x = F.pad(x, (self.causal_padding, 0))
        return self.conv(x)


class CausalConvTranspose1d(nn.Module):
    def __init__(self, chan_in, chan_out, kernel_size, stride, **kwargs):
        super().__init__()
        self.upsample_factor = stride
        self.conv = nn.ConvTranspose1d(chan_in, chan_out, kernel_size, stride, **kwargs)

    def forward(self, x):
        n = x.shape[-1]
        out = self.conv(x)
        return out[..., :(n * self.upsample_factor)]


class MultiScaleDiscriminator(nn.Module):
    def __init__(self, channels=8, input_channels=1):
        super().__init__()
        self.init_conv = nn.Conv1d(input_channels, channels, 7)
        self.conv = nn.Sequential(nn.Conv1d(channels, channels * 2, 8, stride=4, padding=4), nn.LeakyReLU(0.1))
        self.final_conv = nn.Conv1d(channels * 2, 1, 1, bias=False)

    def forward(self, x):
        return self.final_conv(self.conv(self.init_conv(x)))


class LocalTransformerBlock(nn.Module):
    def __init__(self, *, dim, **kwargs):
        super().__init__()
        self.attn = LocalMHA(dim=dim, **kwargs)
        self.ff = FeedForward(dim=dim)

    def forward(self, x):
        x = self.attn(x) + x
        x = self.ff(x) + x
        return x


class SoundStream(nn.Module):
    def __init__(self, *, channels=8, codebook_dim=16, use_local_attn=True, attn_window_size=16):
        super().__init__()
        self.encoder = nn.Sequential(
            CausalConv1d(1, channels, 7), nn.ELU(),
            CausalConv1d(channels, channels * 2, 4, stride=2), nn.ELU(),
            CausalConv1d(channels * 2, codebook_dim, 3))
        attn_kwargs = dict(dim=codebook_dim, dim_head=8, heads=2, window_size=attn_window_size, prenorm=True, causal=True)
        self.encoder_attn = LocalTransformerBlock(**attn_kwargs) if use_local_attn else None
        self.rq = ResidualVQ(dim=codebook_dim)
        self.decoder_attn = LocalTransformerBlock(**attn_kwargs) if use_local_attn else None
        self.decoder = nn.Sequential(
            CausalConv1d(codebook_dim, channels * 2, 7), nn.ELU(),
            CausalConvTranspose1d(channels * 2, channels, 4, stride=2), nn.ELU(),
            CausalConv1d(channels, 1, 7))
        self.discriminators = nn.ModuleList([MultiScaleDiscriminator()])

    def non_discr_parameters(self):
        return [*self.encoder.parameters(), *self.decoder.parameters()]  # <- optimizer

    def forward(self, x, return_discr_loss=False):
        orig_x = x.clone()
        x = self.encoder(x)
        x = x.transpose(1, 2)                      # 'b c n -> b n c'
        if exists(self.encoder_attn):
            x = self.encoder_attn(x)
        x, indices, commit_loss = self.rq(x)
        if exists(self.decoder_attn):
            x = self.decoder_attn(x)
        x = x.transpose(1, 2)                      # 'b n c -> b c n'
        recon_x = self.decoder(x)

        if return_discr_loss:
            real, fake = orig_x, recon_x.detach()
            discr_losses = [hinge_discr_loss(discr(fake), discr(real)) for discr in self.discriminators]
            return torch.stack(discr_losses).mean()

        recon_loss = F.mse_loss(orig_x, recon_x)
        adversarial_loss = torch.stack([hinge_gen_loss(discr(recon_x)) for discr in self.discriminators]).mean()
        return recon_loss + adversarial_loss + commit_loss


# --- audiolm_pytorch/trainer.py (SoundStreamTrainer.train_step), in short -----------------------------
class SoundStreamTrainer:
    def __init__(self, soundstream, lr=3e-3):
        self.soundstream = soundstream
        self.optim = torch.optim.Adam(soundstream.non_discr_parameters(), lr=lr)
        self.discr_optim = torch.optim.Adam(soundstream.discriminators.parameters(), lr=lr)

    def train_step(self, wave):
        loss = self.soundstream(wave)
        loss.backward()
        self.optim.step()
        self.optim.zero_grad()

        self.discr_optim.zero_grad()
        discr_loss = self.soundstream(wave, return_discr_loss=True)
        discr_loss.backward()
        self.discr_optim.step()
        return loss.item(), discr_loss.item()


torch.manual_seed(0)
soundstream = SoundStream()
trainer = SoundStreamTrainer(soundstream)
waves = [torch.randn(4, 1, 64) for _ in range(4)]
attn_before = soundstream.encoder_attn.attn.to_qkv.weight.detach().clone()
for wave in waves:
    trainer.train_step(wave)
attn_w = soundstream.encoder_attn.attn.to_qkv.weight
print("encoder_attn weight in the generator optimizer:", any(p is attn_w for g in trainer.optim.param_groups for p in g["params"]))
print("encoder_attn weight changed:", not torch.equal(attn_before, attn_w))
