"""A Wasserstein auto-encoder with a latent discriminator (schelotto/Wasserstein-AutoEncoders#11): the losses are
pushed back with d_loss.backward(one) where one = torch.Tensor([1]), a shape-(1,) gradient for a 0-dim loss, so
backward raises "Mismatch in shape: grad_output[0] has a shape of torch.Size([1]) and output[0] has a shape of
torch.Size([])"."""
import torch
from torch import nn

torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
decoder = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 16), nn.Sigmoid())
discriminator = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1), nn.Sigmoid())
enc_optim = torch.optim.Adam(encoder.parameters(), lr=1e-3)
dec_optim = torch.optim.Adam(decoder.parameters(), lr=1e-3)
dis_optim = torch.optim.Adam(discriminator.parameters(), lr=5e-4)
one = torch.Tensor([1])  # <- autograd_error
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
