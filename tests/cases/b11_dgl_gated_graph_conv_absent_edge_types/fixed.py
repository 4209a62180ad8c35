"""The fixed twin: edge types are remapped to 0..4 and the layer has one Linear per type the data has
(dmlc/dgl#4282)."""
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
        self.ggcn = GatedGraphConv(in_feats=in_feats, out_feats=out_feats, n_steps=5, n_etypes=5)
        self.classify = nn.Linear(out_feats, 2)

    def forward(self, src, dst, feat, edge_types):
        return self.classify(self.ggcn(src, dst, feat, edge_types).mean(0, keepdim=True))


torch.manual_seed(0)
model = MyGGCN(6, 10)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(3):
    src, dst = torch.randint(0, 12, (40,)), torch.randint(0, 12, (40,))
    edge_types = torch.arange(5)[torch.randint(0, 5, (40,))]
    loss = F.cross_entropy(model(src, dst, torch.randn(12, 6), edge_types), torch.tensor([step % 2]))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
for name, p in model.named_parameters():
    if p.grad is None:
        print(f"{name}'s grad is None")
print("every parameter got a gradient")
