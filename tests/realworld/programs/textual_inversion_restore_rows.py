"""Textual inversion, reduced from the diffusers example
(https://github.com/huggingface/diffusers/blob/main/examples/textual_inversion/textual_inversion.py),
with tiny stand-ins for CLIPTextModel, AutoencoderKL, UNet2DConditionModel and DDPMScheduler.

Patterns kept (each looks like a cut but is right):
- ``resize_token_embeddings``: a new, larger ``nn.Embedding`` replaces the old one and the old rows are
  copied in through ``.weight.data`` (as transformers' ``_get_resized_embeddings`` does); this happens
  before the optimizer is built, so the optimizer holds the new Parameter.
- ``token_embeds = get_input_embeddings().weight.data`` then ``token_embeds[placeholder_id] =
  token_embeds[initializer_id].clone()`` under ``no_grad``: a one-time initialisation of the new row.
- ``vae``, ``unet``, the text encoder's transformer, its final layer norm and its position embedding are
  frozen with ``requires_grad_(False)`` on purpose: only the token embedding is trained.
- ``vae.encode(...).latent_dist.sample().detach()``: latents are data for the denoising loss.
- the optimizer holds the *whole* token-embedding matrix (with weight decay), and after every step the
  rows of all other tokens are written back from ``orig_embeds_params`` (a ``.weight.data.clone()``)
  inside ``torch.no_grad()``: an in-place write into a Parameter that restores everything but the
  placeholder row, which therefore is the only row that learns.
- the frozen UNet still passes the gradient to its ``encoder_hidden_states`` input, which is how the
  placeholder embedding learns.
- the learned vector is exported with ``weight[...].detach()`` at the end, outside training.
"""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class TinyTokenizer:
    def __init__(self, words, model_max_length=8):
        self.vocab = {w: i for i, w in enumerate(["<pad>", "<eos>"] + words)}
        self.model_max_length = model_max_length

    def add_tokens(self, tokens):
        added = 0
        for t in tokens:
            if t not in self.vocab:
                self.vocab[t] = len(self.vocab)
                added += 1
        return added

    def convert_tokens_to_ids(self, tokens):
        return [self.vocab[t] for t in tokens]

    def __len__(self):
        return len(self.vocab)

    def __call__(self, text):
        ids = [self.vocab[w] for w in text.split()] + [self.vocab["<eos>"]]
        ids = ids + [self.vocab["<pad>"]] * (self.model_max_length - len(ids))
        return torch.tensor(ids[:self.model_max_length])


class TextEmbeddings(nn.Module):
    def __init__(self, vocab_size, dim, max_pos):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, dim)
        self.position_embedding = nn.Embedding(max_pos, dim)
        self.register_buffer("position_ids", torch.arange(max_pos).expand((1, -1)), persistent=False)

    def forward(self, input_ids):
        pos = self.position_ids[:, :input_ids.shape[-1]]
        return self.token_embedding(input_ids) + self.position_embedding(pos)


class TextTransformer(nn.Module):
    def __init__(self, vocab_size, dim=32, max_pos=8):
        super().__init__()
        self.embeddings = TextEmbeddings(vocab_size, dim, max_pos)
        self.encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(dim, 4, 64, dropout=0.0, batch_first=True, norm_first=True), 1,
            enable_nested_tensor=False)
        self.final_layer_norm = nn.LayerNorm(dim)

    def forward(self, input_ids):
        h = self.embeddings(input_ids)
        causal = nn.Transformer.generate_square_subsequent_mask(input_ids.shape[1])
        h = self.encoder(h, mask=causal, is_causal=True)
        return (self.final_layer_norm(h),)


class CLIPTextModel(nn.Module):
    def __init__(self, vocab_size):
        super().__init__()
        self.text_model = TextTransformer(vocab_size)

    def get_input_embeddings(self):
        return self.text_model.embeddings.token_embedding

    def resize_token_embeddings(self, new_num_tokens):
        old = self.get_input_embeddings()
        new = nn.Embedding(new_num_tokens, old.embedding_dim)
        n = min(old.num_embeddings, new_num_tokens)
        new.weight.data[:n, :] = old.weight.data[:n, :]
        self.text_model.embeddings.token_embedding = new
        return new

    def forward(self, input_ids):
        return self.text_model(input_ids)


class DiagonalGaussian:
    def __init__(self, parameters):
        self.mean, logvar = torch.chunk(parameters, 2, dim=1)
        self.std = torch.exp(0.5 * torch.clamp(logvar, -30.0, 20.0))

    def sample(self):
        return self.mean + self.std * torch.randn_like(self.mean)


class AutoencoderKL(nn.Module):
    scaling_factor = 0.18215

    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.SiLU(), nn.Conv2d(16, 8, 3, 2, 1))

    def encode(self, x):
        class Out:
            pass
        out = Out()
        out.latent_dist = DiagonalGaussian(self.encoder(x))
        return out


class UNet2DConditionModel(nn.Module):
    def __init__(self, channels=4, hidden=32, cross_dim=32):
        super().__init__()
        self.conv_in = nn.Conv2d(channels, hidden, 3, padding=1)
        self.time_proj = nn.Linear(hidden, hidden)
        self.attn = nn.MultiheadAttention(hidden, 4, kdim=cross_dim, vdim=cross_dim, batch_first=True)
        self.norm = nn.GroupNorm(4, hidden)
        self.conv_out = nn.Conv2d(hidden, channels, 3, padding=1)
        self.hidden = hidden

    def forward(self, sample, timestep, encoder_hidden_states):
        half = self.hidden // 2
        freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32) / half)
        args = timestep[:, None].float() * freqs[None]
        temb = self.time_proj(torch.cat([args.sin(), args.cos()], dim=-1))
        h = self.conv_in(sample) + temb[:, :, None, None]
        b, c, hh, ww = h.shape
        q = h.flatten(2).transpose(1, 2)
        a = self.attn(q, encoder_hidden_states, encoder_hidden_states, need_weights=False)[0]
        h = h + a.transpose(1, 2).reshape(b, c, hh, ww)
        out = self.conv_out(F.silu(self.norm(h)))

        class Out:
            pass
        o = Out()
        o.sample = out
        return o


class DDPMScheduler:
    def __init__(self, num_train_timesteps=100):
        self.num_train_timesteps = num_train_timesteps
        betas = torch.linspace(1e-4, 0.02, num_train_timesteps)
        self.alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)

    def add_noise(self, original_samples, noise, timesteps):
        sqrt_alpha_prod = self.alphas_cumprod[timesteps].sqrt().flatten()[:, None, None, None]
        sqrt_one_minus = (1 - self.alphas_cumprod[timesteps]).sqrt().flatten()[:, None, None, None]
        return sqrt_alpha_prod * original_samples + sqrt_one_minus * noise


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    placeholder_token, initializer_token = "<cat-toy>", "toy"
    tokenizer = TinyTokenizer(["a", "photo", "of", "the", "toy", "rendering", "small", "clean", "good"])
    text_encoder = CLIPTextModel(len(tokenizer))
    vae, unet, noise_scheduler = AutoencoderKL(), UNet2DConditionModel(), DDPMScheduler()

    placeholder_tokens = [placeholder_token]
    num_added_tokens = tokenizer.add_tokens(placeholder_tokens)
    assert num_added_tokens == 1
    initializer_token_id = tokenizer.convert_tokens_to_ids([initializer_token])[0]
    placeholder_token_ids = tokenizer.convert_tokens_to_ids(placeholder_tokens)
    text_encoder.resize_token_embeddings(len(tokenizer))
    token_embeds = text_encoder.get_input_embeddings().weight.data
    with torch.no_grad():
        for token_id in placeholder_token_ids:
            token_embeds[token_id] = token_embeds[initializer_token_id].clone()

    vae.requires_grad_(False)
    unet.requires_grad_(False)
    text_encoder.text_model.encoder.requires_grad_(False)
    text_encoder.text_model.final_layer_norm.requires_grad_(False)
    text_encoder.text_model.embeddings.position_embedding.requires_grad_(False)

    optimizer = torch.optim.AdamW(text_encoder.get_input_embeddings().parameters(), lr=5e-2,
                                  betas=(0.9, 0.999), weight_decay=1e-2, eps=1e-8)
    lr_scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 2))

    templates = ["a photo of a {}", "a rendering of a {}", "a photo of the small {}", "a good photo of a {}"]
    images = torch.rand(4, 3, 16, 16) * 2 - 1
    orig_embeds_params = text_encoder.get_input_embeddings().weight.data.clone()
    text_encoder.train()
    for step in range(6):
        idx = torch.randperm(4)[:2]
        input_ids = torch.stack([tokenizer(templates[i].format(placeholder_token)) for i in idx.tolist()])
        latents = vae.encode(images[idx]).latent_dist.sample().detach()
        latents = latents * vae.scaling_factor
        noise = torch.randn_like(latents)
        bsz = latents.shape[0]
        timesteps = torch.randint(0, noise_scheduler.num_train_timesteps, (bsz,)).long()
        noisy_latents = noise_scheduler.add_noise(latents, noise, timesteps)
        encoder_hidden_states = text_encoder(input_ids)[0]
        model_pred = unet(noisy_latents, timesteps, encoder_hidden_states).sample
        loss = F.mse_loss(model_pred.float(), noise.float(), reduction="mean")
        loss.backward()
        optimizer.step()
        lr_scheduler.step()
        optimizer.zero_grad()
        # Let's make sure we don't update any embedding weights besides the newly added token
        index_no_updates = torch.ones((len(tokenizer),), dtype=torch.bool)
        index_no_updates[min(placeholder_token_ids): max(placeholder_token_ids) + 1] = False
        with torch.no_grad():
            text_encoder.get_input_embeddings().weight[index_no_updates] = orig_embeds_params[index_no_updates]
        print(f"step {step} loss {loss.item():.6f}")

    learned_embeds = text_encoder.get_input_embeddings().weight[
        min(placeholder_token_ids): max(placeholder_token_ids) + 1]
    learned_embeds_dict = {placeholder_token: learned_embeds.detach().cpu()}
    moved = (learned_embeds_dict[placeholder_token][0] - orig_embeds_params[placeholder_token_ids[0]]).norm()
    print(f"placeholder embedding moved by {moved.item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"text_encoder": text_encoder.state_dict(), "unet": unet.state_dict(), "vae": vae.state_dict(),
                    "learned_embeds": learned_embeds_dict}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
