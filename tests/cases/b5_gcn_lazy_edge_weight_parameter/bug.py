"""A learnable GCN edge weight created lazily (pyg-team/pytorch_geometric#2033): `register_parameter(
'edge_weight', None)` in __init__ and `nn.Parameter(...)` on the first forward, after the optimizer was
built from model.parameters(); the edge weights get gradients but no optimizer holds them."""
import torch
from torch import nn


def add_self_loops(edge_index, num_nodes):
    loops = torch.arange(num_nodes).repeat(2, 1)
    return torch.cat([edge_index, loops], dim=1), None


class GCNConv(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.lin = nn.Linear(in_channels, out_channels, bias=False)

    def forward(self, x, edge_index, edge_weight):
        row, col = edge_index
        x = self.lin(x)
        out = torch.zeros_like(x)
        return out.index_add(0, col, x[row] * edge_weight.unsqueeze(-1))


class Net(nn.Module):
    def __init__(self, channels, num_classes):
        super().__init__()
        self.conv1 = GCNConv(channels, channels)
        self.register_parameter('edge_weight', None)
        self.out = nn.Linear(channels, num_classes)

    def reset_parameters(self, edge_index_t):
        self.edge_weight = nn.Parameter(torch.ones((edge_index_t.size(1),), requires_grad=True))  # <- optimizer

    def forward(self, x, edge_index):
        edge_index_t, _ = add_self_loops(edge_index, x.size(0))
        if self.edge_weight is None:
            self.reset_parameters(edge_index_t)
        x = torch.relu(self.conv1(x, edge_index_t, edge_weight=self.edge_weight))
        return self.out(x)


torch.manual_seed(0)
num_nodes, channels = 6, 4
x = torch.randn(num_nodes, channels)
edge_index = torch.tensor([[0, 1, 2, 3, 4, 5, 0, 2], [1, 2, 3, 4, 5, 0, 3, 5]])
y = torch.randint(0, 2, (num_nodes,))
model = Net(channels, 2)
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
for epoch in range(3):
    loss = nn.functional.cross_entropy(model(x, edge_index), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f} edge_weight {model.edge_weight[:4].tolist()}")
