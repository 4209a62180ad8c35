"""The fixed twin: the GraphConv layers are in an nn.ModuleList, so they are registered and trained."""
import torch
import torch.nn.functional as F
from torch import nn


class GraphConv(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) * 0.3)
        self.bias = nn.Parameter(torch.zeros(out_features))

    def forward(self, x, adj):
        return adj @ (x @ self.weight) + self.bias


class GCN(nn.Module):
    def __init__(self, n_feat, n_class, n_layer=2, agg_hidden=16, fc_hidden=16):
        super().__init__()
        self.layers = nn.ModuleList(GraphConv(n_feat if i == 0 else agg_hidden, agg_hidden) for i in range(n_layer))
        self.fc1 = nn.Linear(agg_hidden, fc_hidden)
        self.fc2 = nn.Linear(fc_hidden, n_class)

    def forward(self, x, adj):
        for layer in self.layers:
            x = F.relu(layer(x, adj))
        x = x.mean(dim=1)
        return self.fc2(F.relu(self.fc1(x)))


torch.manual_seed(0)
model = GCN(n_feat=5, n_class=2)
print("counted parameters:", sum(p.numel() for p in model.parameters()))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randn(4, 6, 5)
adj = (torch.rand(4, 6, 6) > 0.5).float() + torch.eye(6)
adj = adj / adj.sum(-1, keepdim=True)
y = torch.tensor([0, 1, 1, 0])
before = model.layers[0].weight.detach().clone()
for epoch in range(3):
    loss = F.cross_entropy(model(x, adj), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
print("GCN layer 0 changed:", not torch.equal(before, model.layers[0].weight))
