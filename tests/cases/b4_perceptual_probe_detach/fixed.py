"""The fixed twin: the probe keeps the features attached, so the perceptual term reaches the autoencoder."""
import torch
from torch import nn
import torch.nn.functional as F


class RecordingProbe:
    def __init__(self):
        self.data = []

    def __call__(self, module, inp, out):
        feat = out.clone()
        self.data.append(feat.flatten(1))

    def clean(self):
        self.data.clear()


torch.manual_seed(0)
autoencoder = nn.Sequential(nn.Linear(8, 4), nn.ReLU(), nn.Linear(4, 8))
feature_net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
feature_net.requires_grad_(False)
probe = RecordingProbe()
feature_net[1].register_forward_hook(probe)
optimizer = torch.optim.Adam(autoencoder.parameters(), lr=1e-3)
x = torch.randn(16, 8)
for step in range(3):
    recon = autoencoder(x)
    probe.clean()
    feature_net(recon)
    feature_net(x)
    fake_feat, real_feat = probe.data
    perceptual = F.mse_loss(fake_feat, real_feat)
    loss = F.mse_loss(recon, x) + perceptual
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f} perceptual {perceptual.item():.4f}")
