"""VAME's RNN-VAE training with the scheduler switched off (LINCellularNeuroscience/VAME#26): the "off" branch
builds `StepLR(optimizer, step_size=100, gamma=0)`, so "the learning rate decreases to 0 after 100 epochs" and the
model stops learning for the rest of training while backward still fills the gradients (the fix: gamma=1 keeps
the learning rate; step_size is 2 here so that the run stays short)."""
import torch
import torch.nn.functional as F
from torch import nn
from torch.optim.lr_scheduler import StepLR


class RNN_VAE(nn.Module):
    def __init__(self, n_features=6, hidden=16, zdim=4):
        super().__init__()
        self.encoder = nn.GRU(n_features, hidden, batch_first=True)
        self.mu, self.logvar = nn.Linear(hidden, zdim), nn.Linear(hidden, zdim)
        self.decoder = nn.Linear(zdim, n_features)

    def forward(self, x):
        _, h = self.encoder(x)
        mu, logvar = self.mu(h[-1]), self.logvar(h[-1])
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return self.decoder(z).unsqueeze(1).expand_as(x), mu, logvar


torch.manual_seed(0)
model = RNN_VAE()
optimizer = torch.optim.Adam(model.parameters(), lr=5e-4, amsgrad=True)
optimizer_scheduler = False
if optimizer_scheduler:
    scheduler = StepLR(optimizer, step_size=2, gamma=0.2, last_epoch=-1)
else:
    scheduler = StepLR(optimizer, step_size=2, gamma=0, last_epoch=-1)  # <- no_update
data = [torch.randn(8, 10, 6) for _ in range(3)]
for epoch in range(5):
    before = model.decoder.weight.detach().clone()
    for seq in data:
        recon, mu, logvar = model(seq)
        kl = -0.5 * torch.mean(1 + logvar - mu.pow(2) - logvar.exp())
        loss = F.mse_loss(recon, seq) + kl
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    scheduler.step()
    changed = not torch.equal(model.decoder.weight, before)
    print(f"epoch {epoch}: lr {optimizer.param_groups[0]['lr']:.1e}, decoder changed: {changed}")
