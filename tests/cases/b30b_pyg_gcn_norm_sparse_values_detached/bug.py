"""PyG pull request #6635 "Fix `gcn_norm` for PyTorch SparseTensor input with gradients",
https://github.com/pyg-team/pytorch_geometric/pull/6635: gcn_norm, given a torch.sparse COO adjacency built from a
learnable edge_weight (adj.requires_grad is True), read the edge values with `adj_t._values()`, which returns a
detached tensor, so the normalised adjacency came back without requires_grad and the edge weights got no
gradient. The fix (EdisonLeeeee, merged by rusty1s): "To track gradients, torch.Tensor.coalesce().values() must be
used instead." Here a hand-written GCN layer (plain torch: scatter_add for the degrees, torch.sparse.mm for the
propagation) learns per-edge weights with Adam."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.sparse.check_sparse_tensor_invariants.disable()


def gcn_norm(adj_t, num_nodes):
    # add self-loops with weight 1
    loop = torch.arange(num_nodes)
    adj_t = adj_t + torch.sparse_coo_tensor(torch.stack([loop, loop]), torch.ones(num_nodes), adj_t.shape)
    adj_t = adj_t.coalesce()
    edge_index, value = adj_t._indices(), adj_t._values()  # <- detach
    row, col = edge_index[0], edge_index[1]
    deg = torch.zeros(num_nodes).scatter_add(0, col, value)
    deg_inv_sqrt = deg.pow(-0.5)
    deg_inv_sqrt = deg_inv_sqrt.masked_fill(deg_inv_sqrt == float('inf'), 0.)
    value = deg_inv_sqrt[row] * value * deg_inv_sqrt[col]
    return torch.sparse_coo_tensor(edge_index, value, adj_t.shape)


class GCNConv(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_channels, out_channels))
        self.bias = nn.Parameter(torch.zeros(out_channels))
        nn.init.xavier_uniform_(self.weight)

    def forward(self, x, adj_t):
        adj_t = gcn_norm(adj_t, x.size(0))
        return torch.sparse.mm(adj_t, x @ self.weight) + self.bias


class Net(nn.Module):
    def __init__(self, edge_index, num_nodes, in_channels, hidden, num_classes):
        super().__init__()
        self.edge_index, self.num_nodes = edge_index, num_nodes
        self.edge_weight = nn.Parameter(torch.ones(edge_index.size(1)))  # learnable edge weights
        self.conv1 = GCNConv(in_channels, hidden)
        self.conv2 = GCNConv(hidden, num_classes)

    def forward(self, x):
        n = self.num_nodes
        adj = torch.sparse_coo_tensor(self.edge_index, self.edge_weight, (n, n))
        x = F.relu(self.conv1(x, adj))
        return self.conv2(x, adj)


num_nodes, num_edges = 30, 90
edge_index = torch.randint(0, num_nodes, (2, num_edges))
edge_index = edge_index[:, edge_index[0] != edge_index[1]]
x = torch.randn(num_nodes, 8)
y = torch.randint(0, 3, (num_nodes,))

model = Net(edge_index, num_nodes, 8, 16, 3)
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
w0 = model.edge_weight.detach().clone()
for epoch in range(20):
    optimizer.zero_grad()
    out = model(x)
    loss = F.cross_entropy(out, y)
    loss.backward()
    optimizer.step()

print(f"loss {loss.item():.4f}")
print("edge_weight.grad is None:", model.edge_weight.grad is None)
print("edge_weight changed:", not torch.equal(w0, model.edge_weight.detach()))
