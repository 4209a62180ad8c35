"""HypHC (HazyResearch/HypHC#7, https://github.com/HazyResearch/HypHC/issues/7): the hyperbolic hierarchical
clustering model learns the radius of its leaf embeddings as `self.scale = nn.Parameter(torch.Tensor([init_size]))`
with init_size=1e-3, and normalize_embeddings multiplies by `self.scale.clamp_min(1e-2).clamp_max(self.max_scale)`
with a leftover debug lower bound of 1e-2 (the commented `self.init_size` was meant). The scale always sits
below the clamp's lower bound, so clamp_min saturates: model.scale gets an all-zero gradient at every step and never
moves, while the embeddings train. Fix: drop the debug bound; clamp with a lower bound below init_size (`self.init_size / 10`), so the scale starts inside the range."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def hyp_lca_norm(a, b):
    """Hyperbolic distance from the origin to the geodesic between a and b (a rough stand-in for utils.lca)."""
    mid = (a + b) / 2
    return 2 * torch.atanh(mid.norm(dim=-1, keepdim=True).clamp_max(1 - 1e-5))


class HypHC(nn.Module):
    def __init__(self, n_nodes=12, rank=2, temperature=0.05, init_size=1e-3, max_scale=1. - 1e-3):
        super().__init__()
        self.embeddings = nn.Embedding(n_nodes, rank)
        self.temperature = temperature
        self.scale = nn.Parameter(torch.Tensor([init_size]), requires_grad=True)
        self.init_size = init_size
        self.max_scale = max_scale

    def normalize_embeddings(self, embeddings):
        return F.normalize(embeddings, p=2, dim=1) * self.scale.clamp_min(1e-2).clamp_max(self.max_scale)  # <- non_differentiable

    def loss(self, triple_ids, similarities):
        e1, e2, e3 = (self.normalize_embeddings(self.embeddings(triple_ids[:, i])) for i in range(3))
        lca_norm = torch.cat([hyp_lca_norm(e1, e2), hyp_lca_norm(e1, e3), hyp_lca_norm(e2, e3)], dim=-1)
        weights = torch.softmax(lca_norm / self.temperature, dim=-1)
        w_ord = torch.sum(similarities * weights, dim=-1, keepdim=True)
        total = torch.sum(similarities, dim=-1, keepdim=True) - w_ord
        return torch.mean(total)


torch.manual_seed(0)
model = HypHC()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
triple_ids = torch.randint(0, 12, (32, 3))
similarities = torch.rand(32, 3)
scale_before = model.scale.item()
for step in range(5):
    optimizer.zero_grad()
    loss = model.loss(triple_ids, similarities)
    loss.backward()
    optimizer.step()
print("scale grad:", model.scale.grad)
print(f"scale {scale_before:.6f} -> {model.scale.item():.6f}")
