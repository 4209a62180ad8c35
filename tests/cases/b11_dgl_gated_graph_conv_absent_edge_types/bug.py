"""GatedGraphConv with n_etypes=8 (dmlc/dgl#4282): "the grad of the bias or weight of ggnn.ggcn.linears.5 or
ggnn.ggcn.linears.3 is None" when checking gradients during training; the layer keeps one Linear per edge type
and applies each only to the edges of its type, and the graphs never contain edge types 3, 5 and 7, so those
Linears never take part in the loss (the fix: n_etypes equal to the edge types the data has, ids remapped)."""
import torch
import torch.nn.functional as F
from torch import nn


class GatedGraphConv(nn.Module):
    def __init__(self, in_feats, out_feats, n_steps, n_etypes):
        super().__init__()
        self.out_feats, self.n_steps, self.n_etypes = out_feats, n_steps, n_etypes
        self.linears = nn.ModuleList([nn.Linear(out_feats, out_feats) for _ in range(n_etypes)])
        self.gru = nn.GRUCell(out_feats, out_feats)

    def forward(self, src, dst, feat, etypes):
        h = F.pad(feat, (0, self.out_feats - feat.size(1)))
        for _ in range(self.n_steps):
            a = torch.zeros_like(h)
            for i in range(self.n_etypes):
                mask = etypes == i
                if mask.any():
                    a = a.index_add(0, dst[mask], self.linears[i](h[src[mask]]))
            h = self.gru(a, h)
        return h


class MyGGCN(nn.Module):
    def __init__(self, in_feats, out_feats):
        super().__init__()
        self.ggcn = GatedGraphConv(in_feats=in_feats, out_feats=out_feats, n_steps=5, n_etypes=8)  # <- unused_parameter
        self.classify = nn.Linear(out_feats, 2)

    def forward(self, src, dst, feat, edge_types):
        return self.classify(self.ggcn(src, dst, feat, edge_types).mean(0, keepdim=True))


torch.manual_seed(0)
model = MyGGCN(6, 10)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
present_types = torch.tensor([0, 1, 2, 4, 6])
for step in range(3):
    src, dst = torch.randint(0, 12, (40,)), torch.randint(0, 12, (40,))
    edge_types = present_types[torch.randint(0, 5, (40,))]
    loss = F.cross_entropy(model(src, dst, torch.randn(12, 6), edge_types), torch.tensor([step % 2]))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
for name, p in model.named_parameters():
    if p.grad is None:
        print(f"{name}'s grad is None")
