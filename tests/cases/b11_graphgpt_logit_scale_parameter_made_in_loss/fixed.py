"""The fixed twin: the temperature is a Parameter of the model, made once and optimized (HKUDS/GraphGPT#31)."""
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def cal_cl_loss(s_features, t_features, labels, logit_scale):
    logits = logit_scale.exp() * s_features @ t_features.t()
    loss_i = F.cross_entropy(logits, labels)
    loss_t = F.cross_entropy(logits.T, labels)
    return (loss_i + loss_t) / 2


class CLIPGraph(nn.Module):
    def __init__(self, graph_dim=12, text_dim=20, embed_dim=16):
        super().__init__()
        self.gnn = nn.Sequential(nn.Linear(graph_dim, 32), nn.ReLU(), nn.Linear(32, embed_dim))
        self.text_proj = nn.Linear(text_dim, embed_dim)
        self.logit_scale = nn.Parameter(torch.ones([]) * np.log(1 / 0.07))

    def forward(self, node_feats, text_feats):
        return F.normalize(self.gnn(node_feats), dim=-1), F.normalize(self.text_proj(text_feats), dim=-1)


torch.manual_seed(0)
model = CLIPGraph()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
node_feats, text_feats = torch.randn(32, 12), torch.randn(32, 20)
labels = torch.arange(32)
scale_before = model.logit_scale.detach().clone()
for step in range(3):
    s_features, t_features = model(node_feats, text_feats)
    loss = cal_cl_loss(s_features, t_features, labels, model.logit_scale)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
print(f"temperature changed: {not torch.equal(model.logit_scale, scale_before)}")
