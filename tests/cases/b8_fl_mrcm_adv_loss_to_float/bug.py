"""Federated MRI reconstruction with cross-site feature alignment (guopengf/FL-MRCM#10): a memory-leak fix turned
loss_adv_g into a detached Python float, so the adversarial alignment term no longer reaches the encoder; the author
confirmed the .detach() belonged on the logging line below."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(16, 8), nn.ReLU())
decoder = nn.Linear(8, 16)
discriminator = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1))
optimizer = torch.optim.Adam([*encoder.parameters(), *decoder.parameters()], lr=1e-2)
optimizer_d = torch.optim.Adam(discriminator.parameters(), lr=1e-2)
lambda_adv, adv_log = 0.5, []
undersampled, fully_sampled = torch.randn(32, 16), torch.randn(32, 16)
for local_step in range(20):
    feats = encoder(undersampled)
    loss_recon = F.l1_loss(decoder(feats), fully_sampled)
    d_out = discriminator(feats)
    loss_adv_g = F.binary_cross_entropy_with_logits(d_out, torch.full_like(d_out, 0.5))
    loss_adv_g = loss_adv_g.detach().item()  # <- cut_term
    adv_log.append(loss_adv_g)
    loss = loss_recon + lambda_adv * loss_adv_g
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    d_fake = discriminator(encoder(undersampled).detach())
    loss_d = F.binary_cross_entropy_with_logits(d_fake, torch.zeros_like(d_fake))
    optimizer_d.zero_grad()
    loss_d.backward()
    optimizer_d.step()
print(f"recon {loss_recon.item():.4f} adv {adv_log[-1]:.4f}")
