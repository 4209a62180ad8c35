"""DeepCTR-Torch's Dice activation (shenweichen/DeepCTR-Torch#93): alpha is
`torch.zeros((num_features,)).to(device)`, a plain tensor attribute, so it never gets a gradient, is in
no model.parameters(), and stays at its initial value while the DIN trains."""
import torch
import torch.nn as nn

device = 'cpu'


class Dice(nn.Module):
    def __init__(self, num_features, dim=2, epsilon=1e-9):
        super(Dice, self).__init__()
        self.bn = nn.BatchNorm1d(num_features, eps=epsilon)
        self.sigmoid = nn.Sigmoid()
        self.dim = dim
        self.alpha = torch.zeros((num_features,)).to(device)  # <- non_parameter_tensor

    def forward(self, x):
        x_p = self.sigmoid(self.bn(x))
        return self.alpha * (1 - x_p) * x + x_p * x


class DNN(nn.Module):
    def __init__(self, inputs_dim, hidden_units=(16, 8)):
        super().__init__()
        dims = (inputs_dim,) + hidden_units
        self.linears = nn.ModuleList([nn.Linear(dims[i], dims[i + 1]) for i in range(len(hidden_units))])
        self.activation_layers = nn.ModuleList([Dice(dims[i + 1]) for i in range(len(hidden_units))])
        self.out = nn.Linear(hidden_units[-1], 1)

    def forward(self, x):
        for linear, act in zip(self.linears, self.activation_layers):
            x = act(linear(x))
        return torch.sigmoid(self.out(x)).squeeze(-1)


torch.manual_seed(7)
model = DNN(10)
optimizer = torch.optim.Adagrad(model.parameters(), lr=0.1)
x, y = torch.randn(32, 10), torch.randint(0, 2, (32,)).float()
for epoch in range(3):
    loss = nn.functional.binary_cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch}: logloss {loss.item():.4f}")
print("Dice alpha after training:", model.activation_layers[0].alpha[:4].tolist())
