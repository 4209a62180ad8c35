"""DeepXDE's DeepONet, PyTorch backend (lululxvi/deepxde#1023, "untrainable bias"): the output bias is created
as `self.b = torch.tensor(0.0, requires_grad=True)`, a plain tensor attribute, so it is not among
`net.parameters()` and the optimizer the model compiles never updates it, although backward fills its `.grad`
(the fix: `torch.nn.parameter.Parameter(torch.tensor(0.0))`)."""
import torch
from torch import nn


class FNN(nn.Module):
    def __init__(self, layer_sizes, activation):
        super().__init__()
        self.activation = activation
        self.linears = nn.ModuleList(nn.Linear(a, b) for a, b in zip(layer_sizes[:-1], layer_sizes[1:]))

    def forward(self, x):
        for linear in self.linears[:-1]:
            x = self.activation(linear(x))
        return self.linears[-1](x)


class DeepONet(nn.Module):
    def __init__(self, layer_sizes_branch, layer_sizes_trunk, activation=torch.tanh):
        super().__init__()
        self.activation_trunk = activation
        self.branch = FNN(layer_sizes_branch, activation)
        self.trunk = FNN(layer_sizes_trunk, activation)
        self.b = torch.tensor(0.0, requires_grad=True)  # <- non_parameter_tensor

    def forward(self, inputs):
        x_func, x_loc = inputs
        x_func = self.branch(x_func)
        x_loc = self.activation_trunk(self.trunk(x_loc))
        x = torch.einsum("bi,bi->b", x_func, x_loc)
        x = torch.unsqueeze(x, 1)
        x += self.b
        return x


torch.manual_seed(0)
m = 20  # sensors of the input function u; the operator is the antiderivative
net = DeepONet([m, 32, 16], [1, 32, 16])
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
sensors = torch.linspace(0, 1, m)
u = torch.sin(torch.rand(64, 1) * 6 * sensors + torch.rand(64, 1))
y = torch.rand(64, 1)
target = (u * (sensors <= y)).sum(1, keepdim=True) / m
for step in range(3):
    optimizer.zero_grad()
    loss = ((net((u, y)) - target) ** 2).mean()
    loss.backward()
    optimizer.step()
print(f"b grad: {net.b.grad.item():.4f}, b: {net.b.item():.4f}, in net.parameters(): "
      f"{any(p is net.b for p in net.parameters())}")
