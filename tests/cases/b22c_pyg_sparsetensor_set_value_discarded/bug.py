"""PyG GCNConv with a learnable edge weight on a SparseTensor adjacency (pyg-team/pytorch_geometric#7401,
https://github.com/pyg-team/pytorch_geometric/issues/7401): "The edge weight can not be learned when using
sparse edge index" -- after output.mean().backward(), model.edge_weight.grad is None.
Why: torch_sparse's SparseTensor.set_value(...) is out of place: it returns a new SparseTensor holding the
values and leaves edge_index untouched (set_value_ is the in-place one). forward discards the result, so both
convs propagate over the value-less adjacency and self.edge_weight never reaches the loss.
Fix: keep the returned tensor: edge_index = edge_index.set_value(self.edge_weight.sigmoid(), layout='coo')."""
import torch
import torch.nn.functional as F


class SparseTensor:
    """torch_sparse.SparseTensor in short (row/col/value storage; set_value returns a new tensor)."""

    def __init__(self, row, col, value=None, sparse_sizes=None):
        self.row, self.col, self.value, self.sparse_sizes = row, col, value, sparse_sizes

    def t(self):
        return SparseTensor(self.col, self.row, self.value, self.sparse_sizes[::-1])

    def set_value_(self, value, layout=None):
        self.value = value
        return self

    def set_value(self, value, layout=None):
        return SparseTensor(self.row, self.col, value, self.sparse_sizes)


class GCNConv(torch.nn.Module):
    """torch_geometric.nn.GCNConv in short: gcn_norm on adj_t (fill 1. if it has no value), then adj_t @ (x W)."""

    def __init__(self, in_channels, out_channels, **kwargs):
        super().__init__()
        self.lin = torch.nn.Linear(in_channels, out_channels, bias=False)
        self.bias = torch.nn.Parameter(torch.zeros(out_channels))

    def forward(self, x, adj_t):
        value = adj_t.value if adj_t.value is not None else torch.ones(adj_t.row.numel())
        deg = torch.zeros(adj_t.sparse_sizes[0]).index_add(0, adj_t.row, value)
        deg_inv_sqrt = deg.pow(-0.5).masked_fill(deg == 0, 0.)
        value = deg_inv_sqrt[adj_t.row] * value * deg_inv_sqrt[adj_t.col]
        h = self.lin(x)
        out = torch.zeros(x.size(0), h.size(1)).index_add(0, adj_t.row, value.view(-1, 1) * h[adj_t.col])
        return out + self.bias


class Net(torch.nn.Module):
    def __init__(self, num_features, num_classes, num_edges):
        super(Net, self).__init__()
        self.edge_weight = torch.nn.Parameter(torch.ones(num_edges))
        self.conv1 = GCNConv(num_features, 16, add_self_loop=False)
        self.conv2 = GCNConv(16, num_classes, add_self_loop=False)

    def forward(self, x, edge_index):
        edge_index.set_value(self.edge_weight.sigmoid(), layout='coo')  # <- unused_parameter
        x = self.conv1(x, edge_index).relu()
        x = self.conv2(x, edge_index)
        return F.log_softmax(x, dim=1)


torch.manual_seed(0)
# Create a test input
num_nodes = 10
num_features = 32
num_classes = 2
num_edges = 10
x = torch.randn(num_nodes, num_features)
edge_index = torch.randint(num_nodes, (2, num_edges))
edge_index = SparseTensor(row=edge_index[0], col=edge_index[1], sparse_sizes=(10, 10)).t()
# Create an instance of the Net class
model = Net(num_features, num_classes, num_edges)
# Forward pass
output = model.forward(x, edge_index)
output.mean().backward()
print(model.edge_weight.grad)
