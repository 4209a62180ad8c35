"""The fixed twin: the next latent is computed under no_grad, as prompt-to-prompt's null_optimization does, so each
step's losses start from a latent without history (tejank10/null-text-inversion#1)."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
NUM_DDIM_STEPS, NUM_INNER_STEPS, GUIDANCE_SCALE = 3, 2, 7.5
unet = nn.Sequential(nn.Conv2d(4 + 8, 16, 3, padding=1), nn.SiLU(), nn.Conv2d(16, 4, 3, padding=1))
unet.requires_grad_(False)
alphas = torch.linspace(0.9, 0.3, NUM_DDIM_STEPS + 1)


def noise_pred_single(latent, t, context):
    return unet(torch.cat([latent, context.view(1, 8, 1, 1).expand(1, 8, 8, 8)], 1)) * (1 + t)


def prev_step(noise_pred, i, latent):
    a_t, a_prev = alphas[NUM_DDIM_STEPS - i], alphas[NUM_DDIM_STEPS - i - 1]
    x0 = (latent - (1 - a_t) ** 0.5 * noise_pred) / a_t ** 0.5
    return a_prev ** 0.5 * x0 + (1 - a_prev) ** 0.5 * noise_pred


def get_noise_pred(latent, i, uncond, cond):
    noise_pred_uncond, noise_pred_cond = noise_pred_single(latent, i, uncond), noise_pred_single(latent, i, cond)
    return prev_step(noise_pred_uncond + GUIDANCE_SCALE * (noise_pred_cond - noise_pred_uncond), i, latent)


latents = [torch.randn(1, 4, 8, 8) for _ in range(NUM_DDIM_STEPS + 1)]  # the DDIM inversion trajectory
uncond_embeddings, cond_embeddings = torch.zeros(8), torch.randn(8)
uncond_embeddings_list = []
latent_cur = latents[-1]
for i in range(NUM_DDIM_STEPS):
    uncond_embeddings = uncond_embeddings.clone().detach()
    uncond_embeddings.requires_grad = True
    optimizer = torch.optim.Adam([uncond_embeddings], lr=1e-2 * (1. - i / 100.))
    latent_prev = latents[len(latents) - i - 2]
    with torch.no_grad():
        noise_pred_cond = noise_pred_single(latent_cur, i, cond_embeddings)
    for j in range(NUM_INNER_STEPS):
        noise_pred_uncond = noise_pred_single(latent_cur, i, uncond_embeddings)
        noise_pred = noise_pred_uncond + GUIDANCE_SCALE * (noise_pred_cond - noise_pred_uncond)
        loss = F.mse_loss(prev_step(noise_pred, i, latent_cur), latent_prev)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    uncond_embeddings_list.append(uncond_embeddings[:1].detach())
    with torch.no_grad():
        latent_cur = get_noise_pred(latent_cur, i, uncond_embeddings, cond_embeddings)
print(f"optimised {len(uncond_embeddings_list)} null-text embeddings; last grad: {uncond_embeddings.grad is not None}")
