"""The fixed twin: one = torch.tensor(1.) is a 0-dim gradient matching the 0-dim losses
(schelotto/Wasserstein-AutoEncoders#11)."""
import torch
from torch import nn

torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
decoder = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 16), nn.Sigmoid())
discriminator = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1), nn.Sigmoid())
enc_optim = torch.optim.Adam(encoder.parameters(), lr=1e-3)
dec_optim = torch.optim.Adam(decoder.parameters(), lr=1e-3)
dis_optim = torch.optim.Adam(discriminator.parameters(), lr=5e-4)
one = torch.tensor(1.)
mone = one * -1
images = torch.rand(32, 16)
for step in range(3):
    # discriminator: prior samples are "real", encodings are "fake"
    z_fake = torch.randn(32, 4)
    d_fake = discriminator(z_fake)
    d_real = discriminator(encoder(images).detach())
    dis_optim.zero_grad()
    (torch.log(d_fake).mean() * 1.0).backward(mone)
    (torch.log(1 - d_real).mean() * 1.0).backward(mone)
    dis_optim.step()
    # auto-encoder with the adversarial term
    z_real = encoder(images)
    recon_loss = nn.functional.mse_loss(decoder(z_real), images)
    d_loss = 1.0 * torch.log(discriminator(z_real)).mean()
    enc_optim.zero_grad()
    dec_optim.zero_grad()
    recon_loss.backward(one, retain_graph=True)
    d_loss.backward(mone)
    enc_optim.step()
    dec_optim.step()
    print(f"step {step}: recon {recon_loss.item():.4f}")
