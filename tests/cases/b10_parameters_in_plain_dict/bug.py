"""Parameters kept in a Python dict (pytorch/pytorch#4631): `self.weights = {}` then
`self.weights['w_i'] = nn.Parameter(...)` in a custom recurrent module; the forward uses w_i and backward fills its
gradient, but module.parameters() does not list it ("Only nn.Parameters defined directly within nn.Module are
listed"), so the optimizer built from parameters() never updates it (the fix: nn.ParameterDict)."""
import torch
import torch.nn.functional as F
from torch import nn


class Module2(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.weights = {}  # <- non_parameter_tensor
        self.weights['w_i'] = nn.Parameter(torch.randn(input_size, hidden_size) * 0.1)
        self.weights['w_h'] = nn.Parameter(torch.randn(hidden_size, hidden_size) * 0.1)
        self.out = nn.Linear(hidden_size, 1)

    def forward(self, xs):
        h = torch.zeros(xs.size(1), self.weights['w_h'].size(0))
        for x in xs:
            h = torch.tanh(x @ self.weights['w_i'] + h @ self.weights['w_h'])
        return self.out(h)


torch.manual_seed(0)
m2 = Module2(6, 12)
optimizer = torch.optim.Adam(m2.parameters(), lr=1e-2)
xs, y = torch.randn(5, 32, 6), torch.randn(32, 1)
w_i_before = m2.weights['w_i'].detach().clone()
for step in range(10):
    loss = F.mse_loss(m2(xs), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"m2 parameters: {[n for n, _ in m2.named_parameters()]}")
print(f"w_i grad set: {m2.weights['w_i'].grad is not None}; w_i changed: {not torch.equal(m2.weights['w_i'], w_i_before)}")
