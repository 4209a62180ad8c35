# Inplace operation in message passing example
# https://github.com/pyg-team/pytorch_geometric/issues/8953
# What went wrong: the "Creating Message Passing Networks" tutorial's GCNConv ends with
#   out += self.bias
# an in-place add on the output of propagate(). When the aggregation saves its output for
# backward (here max aggregation, torch.scatter_reduce 'amax'), loss.backward() raises
# "one of the variables needed for gradient computation has been modified by an inplace operation".
# Fix (maintainer: "Thanks. Fixed :)"): out = out + self.bias
# MessagePassing / add_self_loops / degree / scatter are rewritten below as small plain-torch code.
import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn import Linear, Parameter

torch.manual_seed(0)


# ---- torch_geometric (plain-torch rewrite) -----------------------------------------------
def add_self_loops(edge_index: Tensor, num_nodes: int):
    loop = torch.arange(num_nodes).repeat(2, 1)
    return torch.cat([edge_index, loop], dim=1), None


def degree(index: Tensor, num_nodes: int, dtype=None) -> Tensor:
    out = torch.zeros(num_nodes, dtype=dtype)
    return out.scatter_add_(0, index, torch.ones(index.numel(), dtype=dtype))


def scatter(src: Tensor, index: Tensor, dim: int, dim_size: int, reduce: str) -> Tensor:
    size = list(src.size())
    size[dim] = dim_size
    index = index.view(-1, 1).expand_as(src)
    if reduce in ("sum", "add"):
        return src.new_zeros(size).scatter_add_(dim, index, src)
    if reduce == "max":
        return src.new_zeros(size).scatter_reduce_(dim, index, src, reduce="amax",
                                                   include_self=False)
    raise ValueError(reduce)


class MessagePassing(torch.nn.Module):
    def __init__(self, aggr: str = "add"):
        super().__init__()
        self.aggr = aggr

    def propagate(self, edge_index: Tensor, x: Tensor, norm: Tensor) -> Tensor:
        j, i = edge_index  # source_to_target flow
        out = self.message(x.index_select(0, j), norm)
        return scatter(out, i, dim=0, dim_size=x.size(0), reduce=self.aggr)

    def message(self, x_j: Tensor, norm: Tensor) -> Tensor:
        return x_j


# ---- the tutorial's GCNConv (docs/source/tutorial/create_gnn.rst) ------------------------
class GCNConv(MessagePassing):
    def __init__(self, in_channels, out_channels):
        super().__init__(aggr='max')  # user variant: "max" aggregation instead of "add"
        self.lin = Linear(in_channels, out_channels, bias=False)
        self.bias = Parameter(torch.empty(out_channels))

        self.reset_parameters()

    def reset_parameters(self):
        self.lin.reset_parameters()
        self.bias.data.zero_()

    def forward(self, x, edge_index):
        # x has shape [N, in_channels]
        # edge_index has shape [2, E]

        # Step 1: Add self-loops to the adjacency matrix.
        edge_index, _ = add_self_loops(edge_index, num_nodes=x.size(0))

        # Step 2: Linearly transform node feature matrix.
        x = self.lin(x)

        # Step 3: Compute normalization.
        row, col = edge_index
        deg = degree(col, x.size(0), dtype=x.dtype)
        deg_inv_sqrt = deg.pow(-0.5)
        deg_inv_sqrt[deg_inv_sqrt == float('inf')] = 0
        norm = deg_inv_sqrt[row] * deg_inv_sqrt[col]

        # Step 4-5: Start propagating messages.
        out = self.propagate(edge_index, x=x, norm=norm)

        # Step 6: Apply a final bias vector.
        out = out + self.bias

        return out

    def message(self, x_j, norm):
        # x_j has shape [E, out_channels]

        # Step 4: Normalize node features.
        return norm.view(-1, 1) * x_j


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = GCNConv(8, 16)
        self.conv2 = GCNConv(16, 3)

    def forward(self, x, edge_index):
        x = F.relu(self.conv1(x, edge_index))
        return self.conv2(x, edge_index)


def main():
    num_nodes = 10
    x = torch.randn(num_nodes, 8)
    edge_index = torch.randint(0, num_nodes, (2, 30))
    y = torch.randint(0, 3, (num_nodes,))

    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for epoch in range(3):
        optimizer.zero_grad()
        out = model(x, edge_index)
        loss = F.cross_entropy(out, y)
        loss.backward()
        optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.4f} "
              f"conv1.bias grad norm {model.conv1.bias.grad.norm().item():.4f}")


if __name__ == "__main__":
    main()
