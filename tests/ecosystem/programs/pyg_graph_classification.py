"""PyG graph classification: a list of small random graphs batched by torch_geometric.loader.DataLoader,
GINConv layers with MLPs and BatchNorm, global_add_pool readout, and a linear classifier."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.loader import DataLoader
from torch_geometric.nn import GINConv, global_add_pool


class GIN(nn.Module):
    def __init__(self, in_channels, hidden, num_classes, num_layers=2):
        super().__init__()
        self.convs = nn.ModuleList()
        for i in range(num_layers):
            mlp = nn.Sequential(nn.Linear(in_channels if i == 0 else hidden, hidden), nn.BatchNorm1d(hidden),
                                nn.ReLU(), nn.Linear(hidden, hidden))
            self.convs.append(GINConv(mlp, train_eps=True))
        self.lin = nn.Linear(hidden, num_classes)

    def forward(self, x, edge_index, batch):
        for conv in self.convs:
            x = conv(x, edge_index).relu()
        return self.lin(global_add_pool(x, batch))


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    graphs = []
    for i in range(12):
        n = 5 + i % 4
        graphs.append(Data(x=torch.randn(n, 4), edge_index=torch.randint(0, n, (2, 2 * n)), y=torch.tensor([i % 2])))
    loader = DataLoader(graphs, batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(0))
    model = GIN(4, 16, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for epoch in range(2):
        model.train()
        total = 0.0
        for data in loader:
            optimizer.zero_grad()
            out = model(data.x, data.edge_index, data.batch)
            loss = F.cross_entropy(out, data.y)
            loss.backward()
            optimizer.step()
            total += float(loss) * data.num_graphs
        print(f"epoch {epoch} loss {total / len(graphs):.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
