"""Sphere-AI-Lab/diagdistill (video DMD distillation), issue #2 "Motion dmd loss does not have gradient".
https://github.com/Sphere-AI-Lab/diagdistill/issues/2

What the user saw: the motion DMD loss has no gradient; dmd_loss = original + 0.2 * motion
trains the generator exactly as the original DMD loss alone.
Why: compute_distribution_matching_loss gets grad_motion from _compute_kl_grad inside
`with torch.no_grad()`, and the motion loss is the weighted energy of grad_motion itself
(grad_motion ** 2 * detached weights): nothing in it depends on the generator's output.
Fix: build the motion term like the original DMD term, as a regression of the generator's
frame differences onto a detached target shifted by grad_motion, so it reaches the generator.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
generator = nn.Linear(8, 8)
real_score = nn.Linear(8, 8)
fake_score = nn.Linear(8, 8)
for p in list(real_score.parameters()) + list(fake_score.parameters()):
    p.requires_grad_(False)
optimizer = torch.optim.SGD(generator.parameters(), lr=0.1)
noise = torch.randn(2, 5, 8)  # [B, F, D]

for step in range(4):
    latent = generator(noise)
    with torch.no_grad():
        noisy_latent = latent + 0.1 * torch.randn_like(latent)
        pred_fake, pred_real = fake_score(noisy_latent), real_score(noisy_latent)
        grad = pred_fake - pred_real
        grad_motion = (pred_fake[:, 1:] - pred_fake[:, :-1]) - (pred_real[:, 1:] - pred_real[:, :-1])
    original_target = (latent.double() - grad.double()).detach()
    dmd_original_loss = 0.5 * F.mse_loss(latent.double(), original_target)
    weights = torch.pow(1.2, torch.arange(4.0)).view(1, -1, 1)
    dmd_motion_loss = (grad_motion.double() ** 2 * weights).mean()  # <- cut_term
    dmd_loss = dmd_original_loss + 0.2 * dmd_motion_loss
    optimizer.zero_grad()
    dmd_loss.backward()
    optimizer.step()
    print(f"step {step} original {dmd_original_loss.item():.4f} motion {dmd_motion_loss.item():.4f} "
          f"motion requires_grad={dmd_motion_loss.requires_grad}")
