# RuntimeError: derivative for aten::_coalesced_ is not implemented in utils.to_torch_coo_tensor
# https://github.com/pyg-team/pytorch_geometric/issues/9613  (fixed by PR #9626 "Fix autograd for `torch_coo_tensor`")
# What went wrong: a pooling model (JacobiPool) builds its adjacency with
#   torch_geometric.utils.to_torch_coo_tensor(edge_index, edge_attr)
# where edge_attr carries gradient. to_torch_coo_tensor marked the result as coalesced with
# `adj._coalesced_(True)`, an op autograd has no derivative for, so loss.backward() raised
# "derivative for aten::_coalesced_ is not implemented".
# Fix (PR #9626): pass `is_coalesced=True` to torch.sparse_coo_tensor (PyTorch >= 2.1) instead of
# calling `_coalesced_(True)` on the autograd-tracked sparse tensor.
# PyG's to_torch_coo_tensor / coalesce are rewritten below as small plain-torch code.
from typing import Optional, Tuple, Union

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

torch.manual_seed(0)


# ---- torch_geometric.utils (plain-torch rewrite) ----------------------------------------
def coalesce(edge_index: Tensor, edge_attr: Optional[Tensor], num_nodes: int):
    key = edge_index[0] * num_nodes + edge_index[1]
    key, inv = torch.unique(key, sorted=True, return_inverse=True)
    out_index = torch.stack([key // num_nodes, key % num_nodes], dim=0)
    if edge_attr is None:
        return out_index, None
    out_attr = edge_attr.new_zeros((key.numel(),) + edge_attr.shape[1:])
    out_attr = out_attr.index_add(0, inv, edge_attr)  # scatter(..., reduce='sum')
    return out_index, out_attr


def to_torch_coo_tensor(
    edge_index: Tensor,
    edge_attr: Optional[Tensor] = None,
    size: Optional[Union[int, Tuple[int, int]]] = None,
    is_coalesced: bool = False,
) -> Tensor:
    if size is None:
        size = int(edge_index.max()) + 1
    if not isinstance(size, (tuple, list)):
        size = (size, size)

    if not is_coalesced:
        edge_index, edge_attr = coalesce(edge_index, edge_attr, max(size))

    if edge_attr is None:
        edge_attr = torch.ones(edge_index.size(1), device=edge_index.device)

    adj = torch.sparse_coo_tensor(
        indices=edge_index,
        values=edge_attr,
        size=tuple(size) + edge_attr.size()[1:],
        device=edge_index.device,
    )
    adj = adj._coalesced_(True)  # <- autograd_error
    return adj


# ---- reporter's model (JacobiPool), reconstructed ----------------------------------------
class JacobiPool(nn.Module):
    """Scores nodes, re-weights edges by the scores and filters with a Jacobi polynomial."""

    def __init__(self, in_channels: int, K: int = 3, a: float = 1.0, b: float = 1.0):
        super().__init__()
        self.K, self.a, self.b = K, a, b
        self.score = nn.Linear(in_channels, 1)
        self.alphas = nn.Parameter(torch.ones(K + 1) / (K + 1))

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        s = torch.sigmoid(self.score(x)).view(-1)
        edge_weight = s[edge_index[0]] * s[edge_index[1]]
        adj = to_torch_coo_tensor(edge_index, edge_weight, size=x.size(0))

        a, b = self.a, self.b
        P_prev = x
        P = ((a - b) / 2) * x + ((a + b + 2) / 2) * torch.sparse.mm(adj, x)
        out = self.alphas[0] * P_prev + self.alphas[1] * P
        for k in range(2, self.K + 1):
            c = 2 * k * (k + a + b) * (2 * k + a + b - 2)
            c1 = (2 * k + a + b - 1) * (2 * k + a + b) * (2 * k + a + b - 2) / c
            c2 = (2 * k + a + b - 1) * (a ** 2 - b ** 2) / c
            c3 = 2 * (k + a - 1) * (k + b - 1) * (2 * k + a + b) / c
            P_next = c1 * torch.sparse.mm(adj, P) + c2 * P - c3 * P_prev
            out = out + self.alphas[k] * P_next
            P_prev, P = P, P_next
        return out * s.view(-1, 1)


class Net(nn.Module):
    def __init__(self, in_channels: int, hidden: int, num_classes: int):
        super().__init__()
        self.lin1 = nn.Linear(in_channels, hidden)
        self.pool = JacobiPool(hidden)
        self.lin2 = nn.Linear(hidden, num_classes)

    def forward(self, x, edge_index, batch):
        x = F.relu(self.lin1(x))
        x = self.pool(x, edge_index)
        num_graphs = int(batch.max()) + 1
        g = x.new_zeros(num_graphs, x.size(1)).index_add(0, batch, x)  # global_add_pool
        return self.lin2(g)


def main():
    num_nodes, num_edges = 12, 40
    x = torch.randn(num_nodes, 8)
    edge_index = torch.randint(0, num_nodes, (2, num_edges))
    batch = torch.tensor([0] * 6 + [1] * 6)
    y = torch.tensor([0, 1])

    model = Net(8, 16, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for epoch in range(3):
        optimizer.zero_grad()
        out = model(x, edge_index, batch)
        loss = F.cross_entropy(out, y)
        loss.backward()
        optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.4f} "
              f"score grad norm {model.pool.score.weight.grad.norm().item():.4f}")


if __name__ == "__main__":
    main()
