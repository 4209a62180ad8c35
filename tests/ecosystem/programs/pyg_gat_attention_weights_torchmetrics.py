"""PyG GAT node classification following ``examples/gat.py`` (Cora setup: 8 heads x 8 channels, dropout 0.6,
a one-head output layer; https://github.com/pyg-team/pytorch_geometric/blob/master/examples/gat.py) on a
small random ``FakeDataset`` graph, with the attention coefficients read back through
``return_attention_weights=True`` (https://pytorch-geometric.readthedocs.io/en/latest/generated/torch_geometric.nn.conv.GATConv.html)
and a torchmetrics accuracy updated inside training.

Patterns kept:
- the first ``GATConv`` returns ``(out, (edge_index, alpha))``; ``alpha`` (with the self-loops GATConv adds)
  requires grad but is only inspected (mean attention entropy, after ``.detach()``): it is a side output,
  not part of the loss;
- ``F.dropout`` on the node features and GATConv's own ``dropout=0.6`` on the attention coefficients (whole
  edges dropped from the softmax for the step);
- loss only on ``train_mask`` nodes; evaluation under ``no_grad`` on ``val_mask``;
- ``MulticlassAccuracy`` updated with detached predictions every step and reset at the end.
"""
import os
import warnings

# torch_geometric's own import calls the deprecated torch.jit.script on this torch version.
warnings.filterwarnings("ignore", message=".*torch.jit.script.*is deprecated", category=FutureWarning)

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric import seed_everything
from torch_geometric.datasets import FakeDataset
from torch_geometric.nn import GATConv
from torchmetrics.classification import MulticlassAccuracy


class GAT(nn.Module):
    def __init__(self, in_channels, hidden_channels, out_channels, heads):
        super().__init__()
        self.conv1 = GATConv(in_channels, hidden_channels, heads, dropout=0.6)
        self.conv2 = GATConv(hidden_channels * heads, out_channels, heads=1, concat=False, dropout=0.6)

    def forward(self, x, edge_index):
        x = F.dropout(x, p=0.6, training=self.training)
        x, (att_edge_index, alpha) = self.conv1(x, edge_index, return_attention_weights=True)
        x = F.elu(x)
        x = F.dropout(x, p=0.6, training=self.training)
        return self.conv2(x, edge_index), (att_edge_index, alpha)


def attention_entropy(edge_index, alpha, num_nodes):
    # mean over nodes and heads of -sum_j a_ij log a_ij (coefficients normalised per target node)
    ent = -(alpha * alpha.clamp_min(1e-12).log())
    per_node = torch.zeros(num_nodes, alpha.size(1)).index_add_(0, edge_index[1], ent)
    return per_node.mean()


def main():
    torch.manual_seed(0)
    seed_everything(0)
    torch.set_num_threads(1)
    data = FakeDataset(num_graphs=1, avg_num_nodes=40, num_channels=16, num_classes=4, avg_degree=4)[0]
    perm = torch.randperm(data.num_nodes)
    data.train_mask = torch.zeros(data.num_nodes, dtype=torch.bool)
    data.train_mask[perm[: data.num_nodes // 2]] = True
    data.val_mask = ~data.train_mask

    model = GAT(16, 8, 4, heads=8)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.005, weight_decay=5e-4)
    train_acc = MulticlassAccuracy(num_classes=4)

    for epoch in range(3):
        model.train()
        optimizer.zero_grad()
        out, (att_edge_index, alpha) = model(data.x, data.edge_index)
        loss = F.cross_entropy(out[data.train_mask], data.y[data.train_mask])
        loss.backward()
        optimizer.step()
        train_acc.update(out[data.train_mask].detach().argmax(-1), data.y[data.train_mask])
        ent = attention_entropy(att_edge_index, alpha.detach(), data.num_nodes)
        print(f"epoch {epoch} loss {loss.item():.6f} attention entropy {ent.item():.4f}")
    print(f"train accuracy {train_acc.compute().item():.3f}")
    train_acc.reset()

    model.eval()
    with torch.no_grad():
        out, _ = model(data.x, data.edge_index)
        val_acc = (out[data.val_mask].argmax(-1) == data.y[data.val_mask]).float().mean()
    print(f"val accuracy {val_acc.item():.3f}")

    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
