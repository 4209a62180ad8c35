"""Twin of programs/pyg_gcn.py with one cut: the first layer's output is read
through .data, so conv1 never gets a gradient."""
import os

import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.nn import GCNConv
from torch_geometric.utils import to_undirected


class GCN(torch.nn.Module):
    def __init__(self, in_channels, hidden_channels, out_channels):
        super().__init__()
        self.conv1 = GCNConv(in_channels, hidden_channels, cached=True)
        self.conv2 = GCNConv(hidden_channels, out_channels, cached=True)

    def forward(self, x, edge_index):
        x = F.dropout(x, p=0.5, training=self.training)
        x = self.conv1(x, edge_index).relu().data  # <- data_attr
        x = F.dropout(x, p=0.5, training=self.training)
        return self.conv2(x, edge_index)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    num_nodes = 30
    edge_index = to_undirected(torch.randint(0, num_nodes, (2, 80)), num_nodes=num_nodes)
    data = Data(x=torch.randn(num_nodes, 6), edge_index=edge_index, y=torch.randint(0, 3, (num_nodes,)))
    data.train_mask = torch.rand(num_nodes) < 0.6
    data.test_mask = ~data.train_mask
    model = GCN(6, 16, 3)
    optimizer = torch.optim.Adam([dict(params=model.conv1.parameters(), weight_decay=5e-4),
                                  dict(params=model.conv2.parameters(), weight_decay=0)], lr=0.01)
    for epoch in range(1, 5):
        model.train()
        optimizer.zero_grad()
        out = model(data.x, data.edge_index)
        loss = F.cross_entropy(out[data.train_mask], data.y[data.train_mask])
        loss.backward()
        optimizer.step()
        model.eval()
        with torch.no_grad():
            pred = model(data.x, data.edge_index).argmax(dim=-1)
        acc = int((pred[data.test_mask] == data.y[data.test_mask]).sum()) / int(data.test_mask.sum())
        print(f"Epoch: {epoch:03d}, Loss: {float(loss):.4f}, Test: {acc:.4f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
