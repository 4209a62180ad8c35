"""PyTorch Geometric issue #1394 "SAGPooling layer can't be optimized",
https://github.com/pyg-team/pytorch_geometric/issues/1394: the user's self-designed EdgePooling scores nodes with a
PyG SAGPooling layer and keeps the top edges as an explanation subgraph for a trained GNN; only the pooling layers
are optimized. The parameters of the SAGPooling layer "remain unchanged during training" while the edge part of
EdgePooling learns. The SAGPooling module is constructed inside EdgePooling.forward, so every call builds a fresh,
randomly initialised scorer that is not a registered submodule: it is in no optimizer, its gradients are thrown
away with it, and the node scorer never learns.
Fix: build the SAGPooling once in __init__ (self.node_eval) and call it in forward. (The report passes ratio=1.0,
"keep every node"; PyG 2.x reads a ratio >= 1 as a node count, so 0.99 keeps every node here.)"""
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import torch
import torch.nn.functional as F
from torch.nn import Linear
from torch_geometric.nn import GCNConv, SAGPooling, global_mean_pool


class EdgePooling(torch.nn.Module):

    def __init__(self, in_channels, ratio=0.5, nonlinearity=torch.sigmoid):
        super(EdgePooling, self).__init__()
        self.nonlinearity = nonlinearity
        self.ratio = ratio
        self.in_channels = in_channels
        self.edge_lin = Linear(2 * in_channels, 1)

    def forward(self, x, edge_index, edge_attr=None, multiplier=1):
        if edge_index.size(1) == 0:
            return x, edge_index, edge_attr, None, None

        # SAGPooling is used to score nodes
        node_eval = SAGPooling(in_channels=x.size(1), ratio=0.99)  # <- module_in_forward

        x, edge_index, edge_attr, batch, perm, node_score = node_eval(x, edge_index, edge_attr)
        row, col = edge_index
        edge_logit = self.edge_lin(torch.cat([x[row], x[col]], dim=-1)).view(-1)
        edge_score = self.nonlinearity(edge_logit + node_score[row] + node_score[col]) * multiplier
        k = max(1, int(self.ratio * edge_score.size(0)))
        indices = edge_score.topk(k).indices
        return x, edge_index[:, indices], edge_score[indices], indices, edge_score


class GNN(torch.nn.Module):
    """The trained model being explained (frozen)."""

    def __init__(self, in_channels, hidden, num_classes):
        super().__init__()
        self.conv1 = GCNConv(in_channels, hidden)
        self.conv2 = GCNConv(hidden, hidden)
        self.lin = Linear(hidden, num_classes)

    def forward(self, x, edge_index, edge_weight):
        x = F.relu(self.conv1(x, edge_index, edge_weight))
        x = F.relu(self.conv2(x, edge_index, edge_weight))
        batch = torch.zeros(x.size(0), dtype=torch.long)
        return self.lin(global_mean_pool(x, batch))


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    num_nodes, num_feats = 12, 8
    graphs = []
    for _ in range(3):
        x = torch.randn(num_nodes, num_feats)
        edge_index = torch.randint(0, num_nodes, (2, 30))
        graphs.append((x, edge_index, torch.randint(0, 2, (1,))))

    model = GNN(num_feats, 16, 2)
    for p in model.parameters():
        p.requires_grad_(False)
    edge_pool = EdgePooling(num_feats, ratio=0.5)
    lr = 0.05
    optimizer = torch.optim.Adam([{'params': edge_pool.parameters(), 'lr': lr}])

    for step, (x, edge_index, y) in enumerate(graphs, 1):
        optimizer.zero_grad()
        x, sub_edge_index, sub_edge_weight, indices, edge_score = edge_pool(x, edge_index)
        logits = model(x, sub_edge_index, sub_edge_weight)
        loss = F.cross_entropy(logits, y) + 0.01 * edge_score.mean()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.6f}")

    sag_params = [n for n, _ in edge_pool.named_parameters() if not n.startswith("edge_lin")]
    print("SAGPooling parameters registered in EdgePooling:", sag_params)
    print("SAGPooling parameters in the optimizer:", len(sag_params))
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"edge_pool": edge_pool.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
