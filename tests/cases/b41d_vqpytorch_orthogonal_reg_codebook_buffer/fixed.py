# vector-quantize-pytorch (Dec 2021): VectorQuantize(orthogonal_reg_weight > 0).
# The orthogonal regulariser is a function of the codebook only, but the codebook
# is registered as a buffer, so the penalty never reaches anything trainable.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def l2norm(t):
    return F.normalize(t, p=2, dim=-1)


def orthogonal_loss_fn(t):
    # eq (2) from https://arxiv.org/abs/2112.00384
    n = t.shape[0]
    normed_codes = l2norm(t)
    cosine_sim = normed_codes @ normed_codes.t()
    return (cosine_sim ** 2).sum() / (n ** 2) - (1 / n)


class EuclideanCodebook(nn.Module):
    def __init__(self, dim, codebook_size):
        super().__init__()
        self.codebook_size = codebook_size
        embed = torch.randn(codebook_size, dim)
        self.embed = nn.Parameter(embed)

    def forward(self, x):
        flatten = x.reshape(-1, x.shape[-1])
        embed = self.embed.t()
        dist = -(flatten.pow(2).sum(1, keepdim=True) - 2 * flatten @ embed + embed.pow(2).sum(0, keepdim=True))
        embed_ind = dist.max(dim=-1).indices.view(*x.shape[:-1])
        quantize = F.embedding(embed_ind, self.embed)
        return quantize, embed_ind


class VectorQuantize(nn.Module):
    def __init__(self, dim, codebook_size, commitment=1., orthogonal_reg_weight=10.):
        super().__init__()
        self._codebook = EuclideanCodebook(dim, codebook_size)
        self.commitment = commitment
        self.orthogonal_reg_weight = orthogonal_reg_weight

    @property
    def codebook(self):
        return self._codebook.embed

    def forward(self, x):
        quantize, embed_ind = self._codebook(x)
        loss = torch.tensor([0.], requires_grad=self.training)
        if self.training:
            quantize = x + (quantize - x).detach()
            commit_loss = F.mse_loss(quantize.detach(), x)
            loss = loss + commit_loss * self.commitment
            if self.orthogonal_reg_weight > 0:
                orthogonal_reg_loss = orthogonal_loss_fn(self.codebook)
                loss = loss + orthogonal_reg_loss * self.orthogonal_reg_weight
        return quantize, embed_ind, loss


encoder = nn.Linear(16, 8)
decoder = nn.Linear(8, 16)
vq = VectorQuantize(dim=8, codebook_size=32, orthogonal_reg_weight=10.)
opt = torch.optim.Adam(list(encoder.parameters()) + list(decoder.parameters()) + list(vq.parameters()), lr=1e-2)

x = torch.randn(4, 10, 16)
for step in range(3):
    opt.zero_grad()
    z = encoder(x)
    quantized, indices, vq_loss = vq(z)
    recon = decoder(quantized)
    loss = F.mse_loss(recon, x) + vq_loss.sum()
    loss.backward()
    opt.step()
    print('step', step, 'ortho loss', orthogonal_loss_fn(vq.codebook).item())

print('trainable params in vq:', [n for n, _ in vq.named_parameters()])
print('codebook grad:', vq._codebook.embed.grad)
