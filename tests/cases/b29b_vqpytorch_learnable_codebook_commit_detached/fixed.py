"""lucidrains/vector-quantize-pytorch#47, https://github.com/lucidrains/vector-quantize-pytorch/issues/47: with
VectorQuantize(..., ema_update=False, learnable_codebook=True) the codebook `_codebook.embed` is an nn.Parameter meant
to learn from the losses, yet after loss.backward() `vq._codebook.embed.grad` is None. In forward, the straight-through
step `quantize = x + (quantize - x).detach()` removes the codebook from `quantize`, and the commitment loss is then
computed on `quantize.detach()`, so no loss term reaches the codebook. The repository's fix keeps the codebook's output
from before the straight-through step (`commit_quantize`, not detached when the codebook is learnable) and computes the
commitment loss on it; this fixed twin does. Here a small encoder/VQ/decoder autoencoder trains a few Adam steps; the codebook now gets a
gradient and its values change."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class EuclideanCodebook(nn.Module):
    def __init__(self, dim, codebook_size):
        super().__init__()
        self.embed = nn.Parameter(torch.randn(codebook_size, dim))  # learnable_codebook=True

    def forward(self, x):
        dist = torch.cdist(x, self.embed)
        embed_ind = dist.argmin(dim=-1)
        quantize = F.embedding(embed_ind, self.embed)
        return quantize, embed_ind


class VectorQuantize(nn.Module):
    def __init__(self, dim, codebook_size, commitment_weight=1.0):
        super().__init__()
        self._codebook = EuclideanCodebook(dim, codebook_size)
        self.commitment_weight = commitment_weight

    def forward(self, x):
        quantize, embed_ind = self._codebook(x)
        commit_quantize = quantize  # learnable codebook: the code from before the straight-through step
        if self.training:
            quantize = x + (quantize - x).detach()  # straight through
        loss = torch.zeros((), device=x.device)
        if self.training and self.commitment_weight > 0:
            detached_quantize = commit_quantize
            commit_loss = F.mse_loss(detached_quantize, x)
            loss = loss + commit_loss * self.commitment_weight
        return quantize, embed_ind, loss


encoder = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))
vq = VectorQuantize(dim=8, codebook_size=32)
decoder = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16))
params = list(encoder.parameters()) + list(vq.parameters()) + list(decoder.parameters())
opt = torch.optim.Adam(params, lr=1e-2)
data = torch.randn(64, 16)
embed_before = vq._codebook.embed.detach().clone()

for step in range(5):
    x = data[torch.randint(0, 64, (16,))]
    z = encoder(x)
    quantized, indices, commit_loss = vq(z)
    recon = decoder(quantized)
    loss = F.mse_loss(recon, x) + commit_loss
    opt.zero_grad()
    loss.backward()
    opt.step()

g = vq._codebook.embed.grad
print("vq._codebook.embed.grad:", None if g is None else "norm %.4f" % g.norm().item())
print("codebook changed:", not torch.equal(embed_before, vq._codebook.embed))
print("encoder got grad:", encoder[0].weight.grad is not None)
