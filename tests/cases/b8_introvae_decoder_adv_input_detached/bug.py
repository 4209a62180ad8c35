"""IntroVAE's decoder step (dragen1860/IntroVAE-Pytorch#3): the reconstruction xp is detached before it is encoded
again, so the adversarial KL term on the encoded xp never reaches the decoder, which learns from the reconstruction
loss only."""
import torch
import torch.nn.functional as F
from torch import nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(12, 8)

    def forward(self, x):
        mu, logvar = self.net(x).chunk(2, dim=1)
        return mu, logvar


kl = lambda mu, logvar: -0.5 * torch.mean(1 + logvar - mu.pow(2) - logvar.exp())
torch.manual_seed(0)
encoder, decoder = Encoder(), nn.Linear(4, 12)
optim_encoder = torch.optim.Adam(encoder.parameters(), lr=1e-2)
optim_decoder = torch.optim.Adam(decoder.parameters(), lr=1e-2)
x = torch.randn(16, 12)
for step in range(20):
    mu, logvar = encoder(x)
    loss_encoder = kl(mu, logvar)
    optim_encoder.zero_grad()
    loss_encoder.backward()
    optim_encoder.step()
    mu, logvar = encoder(x)
    z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
    xp = decoder(z.detach())
    loss_ae = F.mse_loss(xp, x)
    mupp, logvarpp = encoder(xp.detach())  # <- cut_term
    loss_adv = kl(mupp, logvarpp)
    loss_decoder = loss_ae + 0.5 * loss_adv
    optim_decoder.zero_grad()
    optim_encoder.zero_grad()
    loss_decoder.backward()
    optim_decoder.step()
print(f"ae {loss_ae.item():.4f} adv {loss_adv.item():.4f}")
