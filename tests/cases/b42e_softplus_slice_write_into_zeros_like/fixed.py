# Reproduces https://github.com/pytorch/pytorch/issues/114505 in a training loop:
# the network head builds its output by writing into slices of a zeros_like buffer,
# and the second column is Softplus of a slice of that same buffer.
import torch
import torch.nn as nn

torch.manual_seed(0)


def func(a):
    b = torch.zeros_like(a)
    b[:, 0] = a[:, 0]
    b[:, 1] = torch.nn.Softplus()(b[:, 0].clone())
    return b


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2))

    def forward(self, x):
        return func(self.body(x))


def nll_loss(out, y):
    # hand-written Gaussian NLL: column 0 is the mean, column 1 the (positive) scale
    mu, sigma = out[:, 0], out[:, 1] + 1e-3
    return (torch.log(sigma) + 0.5 * ((y - mu) / sigma) ** 2).mean()


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x = torch.randn(32, 4)
y = torch.randn(32)

for step in range(3):
    opt.zero_grad()
    out = model(x)
    loss = nll_loss(out, y)
    loss.backward()
    opt.step()
    print(step, loss.item())
