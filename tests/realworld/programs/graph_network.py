"""A graph convolutional network written by hand: symmetric normalisation from degrees, messages
gathered by edge index and summed with index_add_ / scatter_add_, node classification on a mask."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class GCNLayer(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.lin = nn.Linear(cin, cout, bias=False)
        self.bias = nn.Parameter(torch.zeros(cout))

    def forward(self, x, edge_index):
        n = x.size(0)
        loops = torch.arange(n)
        src = torch.cat([edge_index[0], loops])
        dst = torch.cat([edge_index[1], loops])
        deg = torch.zeros(n).index_add_(0, dst, torch.ones(dst.numel()))
        norm = deg[src].rsqrt() * deg[dst].rsqrt()
        h = self.lin(x)
        messages = h[src] * norm.unsqueeze(1)
        out = torch.zeros_like(h).index_add_(0, dst, messages)
        return out + self.bias


class GCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = GCNLayer(5, 16)
        self.conv2 = GCNLayer(16, 3)

    def forward(self, x, edge_index):
        x = F.dropout(F.relu(self.conv1(x, edge_index)), p=0.5, training=self.training)
        return self.conv2(x, edge_index)


def global_mean_pool(x, batch, size):
    total = torch.zeros(size, x.size(1)).scatter_add_(0, batch.unsqueeze(1).expand_as(x), x)
    count = torch.zeros(size).scatter_add_(0, batch, torch.ones(batch.numel())).clamp(min=1)
    return total / count.unsqueeze(1)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    n = 20
    edge_index = torch.randint(0, n, (2, 60))
    x, y = torch.randn(n, 5), torch.randint(0, 3, (n,))
    train_mask = torch.zeros(n, dtype=torch.bool)
    train_mask[:12] = True
    model = GCN()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    for epoch in range(5):
        model.train()
        optimizer.zero_grad()
        out = model(x, edge_index)
        loss = F.cross_entropy(out[train_mask], y[train_mask])
        loss.backward()
        optimizer.step()
        model.eval()
        pred = model(x, edge_index).argmax(dim=1)
        acc = int((pred[~train_mask] == y[~train_mask]).sum()) / int((~train_mask).sum())
        print(f"epoch {epoch} loss {loss.item():.6f} acc {acc:.4f}")
    pooled = global_mean_pool(model(x, edge_index), torch.arange(n) % 4, 4)
    print("pooled", round(pooled.sum().item(), 5))
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
