"""The fixed twin of voice_transfer_non_leaf_optimized (https://github.com/mazzzystar/randomCNN-voice-transfer/issues/16)."""
import torch
from torch import nn

torch.manual_seed(0)
cnn = nn.Sequential(nn.Conv1d(32, 64, 3, padding=1), nn.ReLU())
for p in cnn.parameters():
    p.requires_grad_(False)
content, style = torch.randn(1, 32, 40), torch.randn(1, 32, 40)
a_G_var = (torch.randn(content.shape) * 1e-3).requires_grad_()
optimizer = torch.optim.Adam([a_G_var], lr=0.05)
gram = lambda f: f @ f.transpose(1, 2) / f.shape[-1]
for step in range(20):
    feats = cnn(a_G_var)
    loss = (feats - cnn(content)).pow(2).mean() + (gram(feats) - gram(cnn(style))).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"final loss {loss.item():.4f}")
