"""EdwardDixon/snake PR #2, "Fix gradients update", https://github.com/EdwardDixon/snake/pull/2: the Snake
activation (x + 1/a * sin^2(a*x)) keeps a learnable frequency `a` per feature. When no initial `a` is given,
the else branch draws a random mix of frequencies and writes
    self.a = Parameter(m.rsample(self.in_features)).squeeze()
The PR's author (fedebotu): "The `a` parameters were not updated in the `else` branch because of the
`squeeze()` function after the use of `Parameter()`". .squeeze() on the Parameter returns a plain, non-leaf
tensor, so the module stores it as an ordinary attribute: `a` is not in model.parameters(), the optimizer never
holds it, and the gradient only reaches the orphaned Parameter behind it. Fix (merged): squeeze inside the
wrap, Parameter((m.rsample(self.in_features)).squeeze())."""
import torch
from torch import nn, sin, pow
from torch.nn import Parameter
from torch.distributions.exponential import Exponential

torch.manual_seed(0)


class Snake(nn.Module):
    def __init__(self, in_features, a=None, trainable=True):
        super(Snake, self).__init__()
        self.in_features = in_features if isinstance(in_features, list) else [in_features]

        # Initialize `a`
        if a is not None:
            self.a = Parameter(torch.ones(self.in_features) * a)  # create a tensor out of alpha
        else:
            m = Exponential(torch.tensor([0.1]))
            self.a = Parameter(m.rsample(self.in_features)).squeeze()  # <- non_parameter_tensor

        self.a.requiresGrad = trainable  # set the training of `a` to true

    def forward(self, x):
        return x + (1.0 / self.a) * pow(sin(x * self.a), 2)


class SnakeNet(nn.Module):
    def __init__(self, n_hidden):
        super().__init__()
        self.fc1 = nn.Linear(1, n_hidden)
        self.act = Snake(n_hidden)  # random init: mix of frequencies
        self.fc2 = nn.Linear(n_hidden, 1)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


net = SnakeNet(16)
print("parameters:", [name for name, _ in net.named_parameters()])
optimizer = torch.optim.Adam(net.parameters(), lr=0.01)
x = torch.linspace(-3, 3, 200).unsqueeze(1)
y = torch.sin(2 * x) + 0.3 * x  # a periodic series with a trend, the case Snake is meant for

a_before = net.act.a.detach().clone()
for step in range(300):
    loss = nn.functional.mse_loss(net(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"loss {loss.item():.4f}")
print("a changed:", not torch.equal(a_before, net.act.a.detach()))
