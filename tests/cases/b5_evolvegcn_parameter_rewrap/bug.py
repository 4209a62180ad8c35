"""pytorch_geometric_temporal's EvolveGCNO (benedekrozemberczki/pytorch_geometric_temporal#80): each
forward evolves the GCN weight with an LSTM and stores it back as `torch.nn.Parameter(W.squeeze())`, a
new leaf, so the LSTM and the initial GCN weight get no gradient and never learn."""
import torch
from torch.nn import LSTM


class GCNConv(torch.nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(in_channels, out_channels) * 0.3)

    def forward(self, X, adj):
        return adj @ X @ self.weight


class EvolveGCNO(torch.nn.Module):
    def __init__(self, in_channels):
        super(EvolveGCNO, self).__init__()
        self.recurrent_layer = LSTM(input_size=in_channels, hidden_size=in_channels, num_layers=1)
        self.conv_layer = GCNConv(in_channels=in_channels, out_channels=in_channels)

    def forward(self, X, adj):
        W = self.conv_layer.weight[None, :, :]
        W, _ = self.recurrent_layer(W)
        self.conv_layer.weight = torch.nn.Parameter(W.squeeze())  # <- new_parameter
        X = self.conv_layer(X, adj)
        return X


class RecurrentGCN(torch.nn.Module):
    def __init__(self, node_features):
        super().__init__()
        self.recurrent = EvolveGCNO(node_features)
        self.linear = torch.nn.Linear(node_features, 1)

    def forward(self, x, adj):
        return self.linear(torch.relu(self.recurrent(x, adj)))


torch.manual_seed(0)
num_nodes, node_features = 6, 4
model = RecurrentGCN(node_features)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
adj = torch.eye(num_nodes) + torch.diag(torch.ones(num_nodes - 1), 1)
snapshots = [(torch.randn(num_nodes, node_features), torch.randn(num_nodes, 1)) for _ in range(4)]
lstm_before = model.recurrent.recurrent_layer.weight_ih_l0.detach().clone()
for epoch in range(2):
    cost = 0
    for x, y in snapshots:
        y_hat = model(x, adj)
        cost = cost + torch.mean((y_hat - y) ** 2)
    cost = cost / len(snapshots)
    optimizer.zero_grad()
    cost.backward()
    optimizer.step()
    print(f"epoch {epoch}: MSE {cost.item():.4f}")
print("LSTM changed:", not torch.equal(lstm_before, model.recurrent.recurrent_layer.weight_ih_l0))
