"""Text-graph grounding in GraphGPT (HKUDS/GraphGPT#31): the contrastive loss builds its temperature inside the
loss function, `logit_scale = nn.Parameter(torch.ones([]) * np.log(1 / 0.07)).exp()`; backward gives the new
Parameter a gradient, but it is made anew at every call and is in no optimizer, so "this logit_scale seems never
to be trained" (the maintainers: it stays fixed; CLIP and G2P2 keep it as a module Parameter)."""
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def cal_cl_loss(s_features, t_features, labels):
    logit_scale = nn.Parameter(torch.ones([]) * np.log(1 / 0.07)).exp()  # <- optimizer
    logits = logit_scale * s_features @ t_features.t()
    loss_i = F.cross_entropy(logits, labels)
    loss_t = F.cross_entropy(logits.T, labels)
    return (loss_i + loss_t) / 2


class CLIPGraph(nn.Module):
    def __init__(self, graph_dim=12, text_dim=20, embed_dim=16):
        super().__init__()
        self.gnn = nn.Sequential(nn.Linear(graph_dim, 32), nn.ReLU(), nn.Linear(32, embed_dim))
        self.text_proj = nn.Linear(text_dim, embed_dim)

    def forward(self, node_feats, text_feats):
        return F.normalize(self.gnn(node_feats), dim=-1), F.normalize(self.text_proj(text_feats), dim=-1)


torch.manual_seed(0)
model = CLIPGraph()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
node_feats, text_feats = torch.randn(32, 12), torch.randn(32, 20)
labels = torch.arange(32)
for step in range(3):
    s_features, t_features = model(node_feats, text_feats)
    loss = cal_cl_loss(s_features, t_features, labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
print(f"trainable temperature among model parameters: {any(p.dim() == 0 for p in model.parameters())}")
