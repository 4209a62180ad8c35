"""torch.optim.LBFGS error (pytorch/pytorch#111369, https://github.com/pytorch/pytorch/issues/111369):
a minimal linear regression with optim.LBFGS fails inside optimizer.step(closure) with
"RuntimeError: Trying to backward through the graph a second time".
Why: `pred = model(x)` runs once, outside the closure. LBFGS calls the closure several times per step; the
first call's loss.backward() frees the graph of pred, and the second call builds its loss on that same
freed graph, so its backward raises.
Fix: compute the prediction inside the closure, so that each evaluation builds a fresh graph."""
import torch
from torch import nn, optim

torch.manual_seed(0)
x = torch.rand(size = (100, 10))
y = torch.rand(size = (100, 1))

class LinearRegression(nn.Module):
  def __init__(self, p):
    super(LinearRegression, self).__init__()

    self.p = p
    self.lin = nn.Linear(p, 1)

  def forward(self, x):
    output = self.lin(x)
    return output

model = LinearRegression(x.size(1))
optimizer = optim.LBFGS(model.parameters())
criterion = nn.MSELoss()
before = model.lin.weight.detach().clone()


def closure():
  optimizer.zero_grad()
  pred = model(x)
  loss = criterion(pred, y.view(pred.shape))
  loss.backward()
  return loss

optimizer.step(closure)
print("weights changed:", not torch.equal(before, model.lin.weight))
