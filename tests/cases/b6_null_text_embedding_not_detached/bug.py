"""Null-text inversion of a real image (tejank10/null-text-inversion#1): the prompt embedding is computed once,
before the optimization loop, with the text encoder's graph attached; the first loss.backward() frees that graph
and the second inner step raises "Trying to backward through the graph a second time" (the author: text_embedding
must be detached before the training starts)."""
import torch
import torch.nn.functional as F
from torch import nn


class TextEncoder(nn.Module):
    def __init__(self, vocab=20, dim=8):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab, dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, ids):
        return self.proj(self.token_embedding(ids))


class UNet(nn.Module):
    def __init__(self, dim=8, ch=4):
        super().__init__()
        self.ctx = nn.Linear(dim, ch)
        self.net = nn.Linear(ch + 1, ch)

    def forward(self, latent, t, context):
        h = torch.cat([latent, torch.full_like(latent[:, :1], t / 1000)], dim=1)
        return self.net(h) + self.ctx(context.mean(1))


def prev_step(model_output, t, sample, alpha=0.98):
    return (sample - (1 - alpha) ** 0.5 * model_output) / alpha ** 0.5


torch.manual_seed(0)
text_encoder, unet = TextEncoder(), UNet().requires_grad_(False)
prompt_ids, uncond_ids = torch.randint(0, 20, (1, 5)), torch.zeros(1, 5, dtype=torch.long)
text_embedding = text_encoder(prompt_ids)  # <- autograd_error
with torch.no_grad():
    uncond_init = text_encoder(uncond_ids)
latents = [torch.randn(1, 4) for _ in range(4)]
guidance_scale = 7.5
uncond_embeddings_list = []
uncond_embeddings = uncond_init.clone()
for i, t in enumerate((900, 600, 300)):
    uncond_embeddings = uncond_embeddings.clone().detach()
    uncond_embeddings.requires_grad = True
    optimizer = torch.optim.Adam([uncond_embeddings], lr=1e-2 * (1.0 - i / 100.0))
    latent_prev, latent_cur = latents[i + 1], latents[i]
    for j in range(3):
        noise_pred_uncond = unet(latent_cur, t, uncond_embeddings)
        noise_pred_cond = unet(latent_cur, t, text_embedding)
        noise_pred = noise_pred_uncond + guidance_scale * (noise_pred_cond - noise_pred_uncond)
        latents_prev_rec = prev_step(noise_pred, t, latent_cur)
        loss = F.mse_loss(latents_prev_rec, latent_prev)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    uncond_embeddings_list.append(uncond_embeddings.detach())
    print(f"t {t}: loss {loss.item():.5f}")
