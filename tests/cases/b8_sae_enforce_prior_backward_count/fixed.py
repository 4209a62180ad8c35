"""The fixed twin of sae_enforce_prior_backward_count (https://github.com/evanmy/sae/issues/5)."""
import torch
import torch.nn.functional as F
from torch import nn


class EnforcePrior(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, prior):
        return logits + torch.log(prior + 1e-7)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output, None


torch.manual_seed(0)
encoder, decoder = nn.Conv2d(1, 3, 3, padding=1), nn.Conv2d(3, 1, 3, padding=1)
optimizer = torch.optim.Adam([*encoder.parameters(), *decoder.parameters()], lr=1e-3)
image, prior = torch.rand(2, 1, 8, 8), torch.softmax(torch.randn(1, 3, 8, 8), dim=1)
for step in range(3):
    seg = torch.softmax(EnforcePrior.apply(encoder(image), prior), dim=1)
    loss = F.mse_loss(decoder(seg), image)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
