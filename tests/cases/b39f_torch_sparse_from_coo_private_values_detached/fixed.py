# Learnable edge weights go into a torch sparse COO adjacency, which is then
# converted to a torch_sparse-style SparseTensor for the message passing.
# The converter reads mat._values(), which hands back the values without
# their autograd history, so the edge weights never get a gradient.
import torch
import torch.nn as nn

torch.manual_seed(0)


class SparseTensor:
    """Minimal stand-in for torch_sparse.SparseTensor (row / col / value storage)."""

    def __init__(self, row, col, value, sparse_size, is_sorted=False):
        self.row = row
        self.col = col
        self.value = value
        self.sparse_size = sparse_size
        self.is_sorted = is_sorted

    @classmethod
    def from_torch_sparse_coo_tensor(cls, mat, is_sorted=False):
        mat = mat.coalesce()
        row, col = mat._indices()
        return cls(row=row, col=col, value=mat.values(),
                   sparse_size=mat.size()[:2], is_sorted=is_sorted)

    def matmul(self, other):
        # out[row] += value * other[col]
        out = other.new_zeros(self.sparse_size[0], other.size(1))
        msg = self.value.unsqueeze(-1) * other[self.col]
        return out.index_add(0, self.row, msg)


class LearnedGraphConv(nn.Module):
    def __init__(self, n_nodes, edge_index, in_dim, out_dim):
        super().__init__()
        self.n_nodes = n_nodes
        self.register_buffer("edge_index", edge_index)
        self.edge_weight = nn.Parameter(torch.rand(edge_index.size(1)))
        self.lin = nn.Linear(in_dim, out_dim)

    def forward(self, x):
        adj = torch.sparse_coo_tensor(self.edge_index, self.edge_weight,
                                      (self.n_nodes, self.n_nodes))
        adj = SparseTensor.from_torch_sparse_coo_tensor(adj)
        return adj.matmul(self.lin(x))


n_nodes, in_dim, out_dim = 6, 4, 3
src = torch.tensor([0, 1, 2, 3, 4, 5, 0, 2])
dst = torch.tensor([1, 2, 3, 4, 5, 0, 3, 5])
edge_index = torch.stack([src, dst])

model = LearnedGraphConv(n_nodes, edge_index, in_dim, out_dim)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

x = torch.randn(n_nodes, in_dim)
y = torch.randn(n_nodes, out_dim)
w_before = model.edge_weight.detach().clone()

for step in range(3):
    optimizer.zero_grad()
    out = model(x)
    loss = nn.functional.mse_loss(out, y)
    loss.backward()
    optimizer.step()

print("edge_weight.grad:", model.edge_weight.grad)
print("edge weights changed:", not torch.equal(w_before, model.edge_weight.detach()))
