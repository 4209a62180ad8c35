"""DGL's ARMA graph-convolution example on Cora (dmlc/dgl#4202): training fails at `train_loss.backward()` with
"one of the variables needed for gradient computation has been modified by an inplace operation: [2708, 7], which
is output 0 of ReluBackward0": ARMAConv sums its K parallel stacks with `output += feats`, and the first stack's
output is the ReLU's result that its backward needs (the fix: `output = output + feats`). The graph's message
passing (`update_all(copy_u, sum)`) is a dense adjacency product here."""
import torch
import torch.nn.functional as F
from torch import nn


class ARMAConv(nn.Module):
    def __init__(self, in_dim, out_dim, num_stacks=2, num_layers=2, activation=None, dropout=0.0):
        super().__init__()
        self.K, self.T, self.activation = num_stacks, num_layers, activation
        self.dropout = nn.Dropout(dropout)
        self.w_0 = nn.ModuleDict({str(k): nn.Linear(in_dim, out_dim, bias=False) for k in range(self.K)})
        self.w = nn.ModuleDict({str(k): nn.Linear(out_dim, out_dim, bias=False) for k in range(self.K)})
        self.v = nn.ModuleDict({str(k): nn.Linear(in_dim, out_dim, bias=False) for k in range(self.K)})
        self.bias = nn.Parameter(torch.zeros(self.K, self.T, 1, out_dim))

    def forward(self, adj, feats):
        init_feats = feats
        norm = adj.sum(0).clamp(min=1).pow(-0.5).unsqueeze(1)
        output = None
        for k in range(self.K):
            feats = init_feats
            for t in range(self.T):
                feats = adj @ (feats * norm) * norm
                feats = self.w_0[str(k)](feats) if t == 0 else self.w[str(k)](feats)
                feats = feats + self.v[str(k)](self.dropout(init_feats)) + self.bias[k][t]
                if self.activation is not None:
                    feats = self.activation(feats)
            if output is None:
                output = feats
            else:
                output += feats  # <- inplace_saved
        return output / self.K


torch.manual_seed(0)
n_nodes, n_feats, n_classes = 30, 10, 7
adj = (torch.rand(n_nodes, n_nodes) < 0.15).float()
adj = ((adj + adj.t()) > 0).float()
features, labels = torch.randn(n_nodes, n_feats), torch.randint(0, n_classes, (n_nodes,))
conv1 = ARMAConv(n_feats, 16, activation=nn.ReLU())
conv2 = ARMAConv(16, n_classes, activation=nn.ReLU())
optimizer = torch.optim.Adam([*conv1.parameters(), *conv2.parameters()], lr=0.01, weight_decay=5e-4)
w_before = conv1.w_0["0"].weight.detach().clone()
for epoch in range(3):
    logits = conv2(adj, F.dropout(conv1(adj, features), 0.5))
    train_loss = F.cross_entropy(logits, labels)
    optimizer.zero_grad()
    train_loss.backward()
    optimizer.step()
print(f"conv1 learned: {not torch.equal(conv1.w_0['0'].weight, w_before)}")
