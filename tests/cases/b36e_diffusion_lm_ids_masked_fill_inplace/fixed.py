# Diffusion-LM (CDCD-style) training step: token embeddings are diffused, a time-conditioned
# estimator denoises them, and a CE reconstruction head reads the latent back to token ids.
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class LearnedSinusoidalPosEmb(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weights = nn.Parameter(torch.randn(dim // 2))

    def forward(self, x):
        freq = torch.einsum('b,d->bd', x, self.weights) * 2 * math.pi
        return torch.cat([x.unsqueeze(-1), freq.sin(), freq.cos()], dim=-1)


class Estimator(nn.Module):
    def __init__(self, input_dim, target_dim, model_dim):
        super().__init__()
        self.time_mlp = nn.Sequential(LearnedSinusoidalPosEmb(16), nn.Linear(17, model_dim), nn.GELU())
        self.project = nn.Linear(input_dim, model_dim)
        self.ffn = nn.Sequential(nn.LayerNorm(model_dim), nn.Linear(model_dim, model_dim), nn.GELU())
        self.out = nn.Linear(model_dim, target_dim)

    def forward(self, x, t):
        h = self.project(x) + self.time_mlp(t).unsqueeze(1)
        h = h + self.ffn(h)
        return self.out(h), h


class DiffusionLM(nn.Module):
    def __init__(self, num_embeddings=50, embedding_dim=8, model_dim=32):
        super().__init__()
        self.embedding = nn.Embedding(num_embeddings, embedding_dim)
        self.norm = nn.LayerNorm(embedding_dim)
        self.estimator = Estimator(embedding_dim * 2, embedding_dim, model_dim)
        self.lm_head = nn.Linear(model_dim, num_embeddings)
        self.loss_ce = nn.CrossEntropyLoss(reduction='none')

    def gamma(self, t, ns=0.0002, ds=0.00025):
        return torch.cos(((t + ns) / (1 + ds)) * math.pi / 2) ** 2

    def compute_loss(self, ids, lengths):
        x = self.norm(self.embedding(ids))

        len_mask = torch.arange(ids.shape[1]).unsqueeze(0) < lengths.unsqueeze(1)
        cond_mask = torch.rand(ids.shape) < 0.1
        diff_mask = torch.logical_and(len_mask, torch.logical_not(cond_mask))
        num_elems = diff_mask.sum()

        t = torch.rand(ids.shape[0]).clamp(1e-5, 1 - 1e-5)
        g = self.gamma(t)[:, None, None]
        x_t = g.sqrt() * x + (1 - g).sqrt() * torch.randn_like(x)
        x_cond = x.masked_fill(~cond_mask.unsqueeze(-1), 0.0)
        x_0_estimation, latent = self.estimator(torch.cat([x_t, x_cond], dim=-1), t)

        loss_diff = ((x - x_0_estimation) ** 2)[diff_mask].mean()

        logits = self.lm_head(latent)
        ids = ids.masked_fill(torch.logical_not(diff_mask), -100)
        loss_reconstruction = self.loss_ce(logits.transpose(2, 1), ids).sum() / num_elems
        return loss_diff + loss_reconstruction


model = DiffusionLM()
optim = torch.optim.AdamW(model.parameters(), lr=1e-3)

ids = torch.randint(0, 50, (4, 12))
lengths = torch.tensor([12, 10, 8, 12])

loss = model.compute_loss(ids, lengths)
loss.backward()
optim.step()
print("loss", loss.item(), "embedding grad norm", model.embedding.weight.grad.norm().item())
