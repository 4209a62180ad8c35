"""PyG issue #414 "About dense_to_sparse", https://github.com/pyg-team/pytorch_geometric/issues/414: a Gumbel-softmax
graph learner produces a dense N x N adjacency, dense_to_sparse turns it into (edge_index, edge_value), and only
edge_index is given to the GCN: "I found that Gumbel Leaner can learn nothing". rusty1s: dense_to_sparse is
differentiable "only for non-zero entries"; the author then found where the gradients got lost (the float entries of
the Gumbel adjacency only survive in edge_value), and in the follow-up #429 rusty1s: "gradients will be propagated
through edge_value, not edge_index ... For GCNConv, simply pass in the edge_value: conv(x, edge_index, edge_value)".
Plain torch: dense_to_sparse via nonzero(), GCNConv with index_add_ aggregation and an optional edge_weight."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def dense_to_sparse(adj):
    edge_index = adj.nonzero().t()
    return edge_index, adj[edge_index[0], edge_index[1]]


class GCNConv(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.lin = nn.Linear(in_channels, out_channels)

    def forward(self, x, edge_index, edge_weight=None):
        row, col = edge_index
        if edge_weight is None:
            edge_weight = torch.ones(row.size(0))
        deg = torch.zeros(x.size(0)).index_add_(0, col, edge_weight) + 1.0
        norm = deg[row].rsqrt() * edge_weight * deg[col].rsqrt()
        x = self.lin(x)
        out = x / deg.unsqueeze(-1)                                 # self loop
        return out.index_add(0, col, norm.unsqueeze(-1) * x[row])  # messages j -> i


class GumbelLearner(nn.Module):
    def __init__(self, in_channels, hidden):
        super().__init__()
        self.enc = nn.Linear(in_channels, hidden)
        self.edge_mlp = nn.Linear(2 * hidden, 2)

    def forward(self, x, tau=0.5):
        h = torch.relu(self.enc(x))
        n = h.size(0)
        pair = torch.cat([h.unsqueeze(1).expand(n, n, -1), h.unsqueeze(0).expand(n, n, -1)], dim=-1)
        logits = self.edge_mlp(pair)
        sample = F.gumbel_softmax(logits, tau=tau, hard=True)[..., 0]
        return sample * (1 - torch.eye(n))


class Net(nn.Module):
    def __init__(self, in_channels, hidden, num_classes):
        super().__init__()
        self.learner = GumbelLearner(in_channels, hidden)
        self.conv1 = GCNConv(in_channels, hidden)
        self.lin = nn.Linear(hidden, num_classes)

    def forward(self, x):
        adj = self.learner(x)
        edge_index, edge_value = dense_to_sparse(adj)
        h = F.relu(self.conv1(x, edge_index, edge_value))
        return self.lin(h)


num_nodes = 24
x = torch.randn(num_nodes, 6)
y = (x[:, 0] > 0).long()
model = Net(6, 16, 2)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
w0 = model.learner.edge_mlp.weight.detach().clone()
for epoch in range(30):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()

print(f"loss {loss.item():.4f}")
print("learner.edge_mlp.weight.grad is None:", model.learner.edge_mlp.weight.grad is None)
print("Gumbel learner changed:", not torch.equal(w0, model.learner.edge_mlp.weight.detach()))
