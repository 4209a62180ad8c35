"""The fixed twin: the edge weights are created in __init__, before the optimizer is built."""
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
    def __init__(self, channels, num_classes, num_edges):
        super().__init__()
        self.conv1 = GCNConv(channels, channels)
        self.edge_weight = nn.Parameter(torch.ones((num_edges,), requires_grad=True))
        self.out = nn.Linear(channels, num_classes)

    def forward(self, x, edge_index):
        edge_index_t, _ = add_self_loops(edge_index, x.size(0))
        x = torch.relu(self.conv1(x, edge_index_t, edge_weight=self.edge_weight))
        return self.out(x)


torch.manual_seed(0)
num_nodes, channels = 6, 4
x = torch.randn(num_nodes, channels)
edge_index = torch.tensor([[0, 1, 2, 3, 4, 5, 0, 2], [1, 2, 3, 4, 5, 0, 3, 5]])
y = torch.randint(0, 2, (num_nodes,))
model = Net(channels, 2, num_edges=edge_index.size(1) + num_nodes)
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
for epoch in range(3):
    loss = nn.functional.cross_entropy(model(x, edge_index), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f} edge_weight {model.edge_weight[:4].tolist()}")
