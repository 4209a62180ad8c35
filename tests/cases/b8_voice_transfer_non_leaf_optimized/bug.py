"""Voice style transfer with a random CNN (mazzzystar/randomCNN-voice-transfer#16): the generated spectrogram is
made with requires_grad=True and then moved and scaled, so it is a non-leaf and Adam raises "can't optimize a
non-leaf Tensor" (the scaling stands in for .cuda() on this CPU)."""
import torch
from torch import nn

torch.manual_seed(0)
cnn = nn.Sequential(nn.Conv1d(32, 64, 3, padding=1), nn.ReLU())
for p in cnn.parameters():
    p.requires_grad_(False)
content, style = torch.randn(1, 32, 40), torch.randn(1, 32, 40)
a_G_var = torch.randn(content.shape, requires_grad=True) * 1e-3  # <- non_leaf_watched
optimizer = torch.optim.Adam([a_G_var], lr=0.05)
gram = lambda f: f @ f.transpose(1, 2) / f.shape[-1]
for step in range(20):
    feats = cnn(a_G_var)
    loss = (feats - cnn(content)).pow(2).mean() + (gram(feats) - gram(cnn(style))).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"final loss {loss.item():.4f}")
