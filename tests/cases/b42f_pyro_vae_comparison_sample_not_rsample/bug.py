# Shape of pyro examples/vae/vae_comparison.py (PyTorch implementation), before pyro PR #1896.
# The latent is drawn with Normal(...).sample(), which runs under torch.no_grad(), so the
# reconstruction loss never reaches the encoder; the encoder is driven by the KL term alone
# and its posterior collapses onto the prior.
import itertools

import torch
import torch.nn as nn
from torch.nn import functional
from torch.distributions import Normal

torch.manual_seed(0)
D_IN, D_H, D_Z, BATCH = 64, 32, 4, 32
TRAIN, TEST = 'train', 'test'


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(D_IN, D_H)
        self.fc21 = nn.Linear(D_H, D_Z)
        self.fc22 = nn.Linear(D_H, D_Z)
        self.relu = nn.ReLU()

    def forward(self, x):
        x = x.reshape(-1, D_IN)
        h1 = self.relu(self.fc1(x))
        return self.fc21(h1), torch.exp(self.fc22(h1))


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc3 = nn.Linear(D_Z, D_H)
        self.fc4 = nn.Linear(D_H, D_IN)
        self.relu = nn.ReLU()

    def forward(self, z):
        h3 = self.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))


class PyTorchVAEImpl(object):
    def __init__(self):
        self.vae_encoder = Encoder()
        self.vae_decoder = Decoder()
        self.mode = TRAIN
        model_params = itertools.chain(self.vae_encoder.parameters(), self.vae_decoder.parameters())
        self.optimizer = torch.optim.Adam(model_params, 1e-2)

    def model_eval(self, x):
        z_mean, z_var = self.vae_encoder(x)
        if self.mode == TRAIN:
            z = Normal(z_mean, z_var.sqrt()).sample()  # <- cut_term
        else:
            z = z_mean
        return self.vae_decoder(z), z_mean, z_var

    def compute_loss_and_gradient(self, x):
        self.optimizer.zero_grad()
        recon_x, z_mean, z_var = self.model_eval(x)
        binary_cross_entropy = functional.binary_cross_entropy(recon_x, x.reshape(-1, D_IN))
        kl_div = -0.5 * torch.sum(1 + z_var.log() - z_mean.pow(2) - z_var)
        kl_div /= BATCH * D_IN
        loss = binary_cross_entropy + kl_div
        if self.mode == TRAIN:
            loss.backward()
            self.optimizer.step()
        return loss.item(), kl_div.item()


data = (torch.rand(BATCH, D_IN) > 0.5).float()
vae = PyTorchVAEImpl()
for step in range(100):
    loss, kl = vae.compute_loss_and_gradient(data)

# Symptom: the KL to the prior goes to ~0 (posterior collapse): the encoder learned nothing from x.
print(f"final loss {loss:.4f}  KL(q(z|x)||p(z)) per element {kl:.6f}")
