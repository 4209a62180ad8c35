"""The fixed twin: only the real features are detached, so the feature loss trains the generator
(yuval-reshef/StreamVC#3)."""
import torch
from torch import nn


class FeatureLoss(nn.Module):
    def __init__(self, n_blocks=2, n_layers=3):
        super().__init__()
        self.n_blocks, self.n_layers = n_blocks, n_layers

    def forward(self, real, fake):
        loss = torch.tensor(0.0)
        wt = (1.0 / self.n_blocks) * (4.0 / (self.n_layers + 1))
        for i in range(self.n_blocks):
            for j in range(len(fake[i]) - 1):
                loss = loss + wt * torch.abs(fake[i][j] - real[i][j].detach()).mean()
        return loss


class Discriminator(nn.Module):
    def __init__(self, n_blocks=2):
        super().__init__()
        self.blocks = nn.ModuleList(
            nn.ModuleList([nn.Conv1d(1, 4, 5, padding=2), nn.Conv1d(4, 4, 5, padding=2), nn.Conv1d(4, 1, 3, padding=1)])
            for _ in range(n_blocks))

    def forward(self, x):
        outs = []
        for block in self.blocks:
            h, feats = x, []
            for layer in block:
                h = torch.relu(layer(h))
                feats.append(h)
            outs.append(feats)
        return outs


torch.manual_seed(0)
generator = nn.Sequential(nn.Conv1d(1, 8, 7, padding=3), nn.Tanh(), nn.Conv1d(8, 1, 7, padding=3))
discriminator = Discriminator().requires_grad_(False)
feature_loss = FeatureLoss()
opt_g = torch.optim.Adam(generator.parameters(), lr=1e-4)
source, target = torch.randn(2, 1, 64), torch.randn(2, 1, 64)
for step in range(2):
    fake = generator(source)
    fake_outs, real_outs = discriminator(fake), discriminator(target)
    adv_loss = sum((1 - feats[-1]).pow(2).mean() for feats in fake_outs)
    feat_loss = feature_loss(real_outs, fake_outs)
    g_loss = adv_loss + 100.0 * feat_loss
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
    print(f"step {step}: feature loss {feat_loss.item():.4f}, requires grad: {feat_loss.requires_grad}")
