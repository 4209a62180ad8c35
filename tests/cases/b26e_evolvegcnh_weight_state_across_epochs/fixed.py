"""PyTorch Geometric Temporal pull request #284 "fix weight in-place update",
https://github.com/benedekrozemberczki/pytorch_geometric_temporal/pull/284 : EvolveGCNH keeps the GCN weight that its
GRU evolves as module state, `_, self.weight = self.recurrent_layer(X_tilde, self.weight)`, so the weight returned at
the last snapshot of one epoch, still attached to that epoch's graph, is the GRU's hidden state at the first snapshot
of the next epoch. The library's own training example (cost summed over the snapshots, one backward per epoch) then
fails in the second epoch: backward walks from the new graph into the previous epoch's graph, whose buffers the first
backward freed, and raises a RuntimeError (the PR's author hit it with torch 2.4 / PyG 2.6.1).
Fix: stop the evolved weight from carrying the old graph into the next call. The PR removed the `self.weight` state
and passes the weight in as an argument; here the line keeps its place and the carried weight is detached
(`self.recurrent_layer(X_tilde, self.weight.detach())`). The line to change is in the library's EvolveGCNH (stand-in
below), not in the user's loop. TopKPooling and the fixed-weight GCNConv are short dense-adjacency stand-ins; the
snapshots are random tensors in place of the ChickenpoxDatasetLoader data."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)


# --- torch_geometric.nn.TopKPooling stand-in ---------------------------------------------------
class TopKPooling(nn.Module):
    def __init__(self, in_channels, ratio):
        super().__init__()
        self.ratio = ratio
        self.weight = nn.Parameter(torch.randn(1, in_channels))

    def forward(self, x, edge_index, edge_attr=None):
        score = (x * self.weight).sum(dim=-1) / self.weight.norm(p=2, dim=-1)
        k = int(math.ceil(self.ratio * x.size(0)))
        perm = torch.topk(score, k).indices
        x = x[perm] * torch.tanh(score[perm]).view(-1, 1)
        return x, edge_index, edge_attr, None, perm, score[perm]


# --- torch_geometric_temporal GCNConv_Fixed_W stand-in (dense normalised adjacency) -------------
class GCNConv_Fixed_W(nn.Module):
    def forward(self, W, x, edge_index, edge_weight=None):
        n = x.size(0)
        if edge_weight is None:
            edge_weight = torch.ones(edge_index.size(1))
        adj = torch.zeros(n, n).index_put((edge_index[1], edge_index[0]), edge_weight, accumulate=True)
        adj = adj + torch.eye(n)
        deg_inv_sqrt = adj.sum(dim=1).pow(-0.5)
        adj = deg_inv_sqrt.view(-1, 1) * adj * deg_inv_sqrt.view(1, -1)
        return adj @ (x @ W)


# --- torch_geometric_temporal.nn.recurrent.EvolveGCNH (the library's forward) -------------------
class EvolveGCNH(nn.Module):
    def __init__(self, num_of_nodes, in_channels):
        super().__init__()
        self.num_of_nodes = num_of_nodes
        self.in_channels = in_channels
        self.weight = None
        self.initial_weight = nn.Parameter(torch.Tensor(1, in_channels, in_channels))
        self.ratio = in_channels / num_of_nodes
        self.pooling_layer = TopKPooling(self.in_channels, self.ratio)
        self.recurrent_layer = nn.GRU(input_size=self.in_channels, hidden_size=self.in_channels, num_layers=1)
        self.conv_layer = GCNConv_Fixed_W()
        nn.init.xavier_uniform_(self.initial_weight)

    def forward(self, X, edge_index, edge_weight=None):
        X_tilde = self.pooling_layer(X, edge_index)
        X_tilde = X_tilde[0][None, :, :]
        if self.weight is None:
            _, self.weight = self.recurrent_layer(X_tilde, self.initial_weight)
        else:
            _, self.weight = self.recurrent_layer(X_tilde, self.weight.detach())
        X = self.conv_layer(self.weight.squeeze(dim=0), X, edge_index, edge_weight)
        return X


# --- the user's script (examples/recurrent/evolvegcnh_example.py, in short) --------------------
class RecurrentGCN(nn.Module):
    def __init__(self, node_count, node_features):
        super().__init__()
        self.recurrent = EvolveGCNH(node_count, node_features)
        self.linear = nn.Linear(node_features, 1)

    def forward(self, x, edge_index, edge_weight):
        h = self.recurrent(x, edge_index, edge_weight)
        h = F.relu(h)
        h = self.linear(h)
        return h


num_nodes, num_features = 20, 4
edge_index = torch.randint(0, num_nodes, (2, 60))
edge_attr = torch.rand(60)
train_dataset = [(torch.randn(num_nodes, num_features), torch.randn(num_nodes, 1)) for _ in range(5)]

model = RecurrentGCN(node_count=num_nodes, node_features=num_features)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
before = {name: p.detach().clone() for name, p in model.named_parameters()}

model.train()
for epoch in range(3):
    cost = 0
    for time, (x, y) in enumerate(train_dataset):
        y_hat = model(x, edge_index, edge_attr)
        cost = cost + torch.mean((y_hat - y) ** 2)
    cost = cost / (time + 1)
    cost.backward()
    optimizer.step()
    optimizer.zero_grad()
    print("epoch", epoch, "cost", round(cost.item(), 4))

for name, p in model.named_parameters():
    print(name, "changed:", not torch.equal(before[name], p))
