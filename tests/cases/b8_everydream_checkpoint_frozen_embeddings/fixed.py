"""The fixed twin of everydream_checkpoint_frozen_embeddings (https://github.com/victorchall/EveryDream2trainer/issues/172)."""
import warnings
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

warnings.simplefilter("ignore")
torch.manual_seed(0)
embeddings = nn.Embedding(30, 16)
embeddings.weight.requires_grad_(False)
encoder_layers = nn.ModuleList([nn.Sequential(nn.Linear(16, 16), nn.GELU()) for _ in range(2)])
unet = nn.Linear(16 + 8, 8)
optimizer = torch.optim.AdamW([*encoder_layers.parameters(), *unet.parameters()], lr=1e-3)
tokens, latents, noise = torch.randint(0, 30, (4, 5)), torch.randn(4, 8), torch.randn(4, 8)
for step in range(3):
    hidden = embeddings(tokens)
    for layer in encoder_layers:
        hidden = checkpoint(layer, hidden, use_reentrant=False)
    cond = hidden.mean(1)
    loss = F.mse_loss(unet(torch.cat([cond, latents], -1)), noise)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("text encoder grad:", encoder_layers[0][0].weight.grad is not None, "loss", round(loss.item(), 4))
