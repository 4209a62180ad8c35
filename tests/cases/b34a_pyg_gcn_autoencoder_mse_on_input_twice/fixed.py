"""PyG "Graph Autoencoder" (pyg-team/pytorch_geometric#874): a two-layer GCNConv net (3 -> 16 -> 3) trained with Adam
over a DataLoader of graphs; loss.backward() raises "RuntimeError: element 0 of tensors does not require grad and
does not have a grad_fn". The loss is F.mse_loss(data.x, data.x): it compares the input with itself, so the model's
output `out` never enters it and the loss has no graph (no parameter can ever learn from it).
Fix (rusty1s: "You need to compute mse based on out and data.y"): loss = F.mse_loss(out, data.y).
GCNConv (self loops, symmetric normalization, add aggregation) is written with plain torch; a list of small random
graphs stands in for the loader."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class Data:
    def __init__(self, x, edge_index, y):
        self.x, self.edge_index, self.y = x, edge_index, y


class GCNConv(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.lin = nn.Linear(in_channels, out_channels, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_channels))

    def forward(self, x, edge_index):
        n = x.size(0)
        loops = torch.arange(n)
        row, col = torch.cat([edge_index, torch.stack([loops, loops])], dim=1)
        deg = torch.zeros(n).index_add(0, col, torch.ones(col.numel()))
        norm = deg.pow(-0.5)[row] * deg.pow(-0.5)[col]
        h = self.lin(x)
        out = torch.zeros_like(h).index_add(0, col, norm.unsqueeze(-1) * h[row])
        return out + self.bias


class Net(torch.nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = GCNConv(3, 16)
        self.conv2 = GCNConv(16, 3)

    def forward(self, data):
        x, edge_index = data.x, data.edge_index
        x = self.conv1(x, edge_index)
        x = self.conv2(x, edge_index)
        return x


def make_graph(num_nodes=12, num_edges=30):
    x = torch.randn(num_nodes, 3)
    edge_index = torch.randint(0, num_nodes, (2, num_edges))
    return Data(x=x, edge_index=edge_index, y=x.clone())


loader = [make_graph() for _ in range(4)]
device = 'cpu'
model = Net().to(device)
optimizer = torch.optim.Adam(model.parameters())
w_before = model.conv1.lin.weight.detach().clone()

epochs = 3
for e in range(epochs):
    running_loss = 0
    for data in loader:
        optimizer.zero_grad()
        out = model(data)
        loss = F.mse_loss(out, data.y)
        loss.backward()
        optimizer.step()
        running_loss += loss.item()
    print(f"epoch {e}: loss {running_loss / len(loader):.4f}")

print("conv1 weight changed:", not torch.equal(w_before, model.conv1.lin.weight))
