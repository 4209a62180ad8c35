"""An in-place row update inside forward (www.yongfengli.tk, "Inplace operation in pytorch"): b = mm(param, a), then in
a loop `b[i] = b[i] + 1` followed by `y = y + mm(param, b)`; that mm saved b to compute the parameter's gradient,
and the next iteration's assignment to b[i] writes into it, so backward raises "one of the variables needed for
gradient computation has been modified by an inplace operation" (the post's fix adds a one-hot row out of place:
b = b + bione)."""
import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.param = nn.Parameter(torch.randn(10, 10) * 0.1)

    def forward(self, a):
        y = 0
        b = torch.mm(self.param, a)
        for i in range(10):
            b[i] = b[i] + 1  # <- inplace_saved
            y = y + torch.mm(self.param, b)
        return y


torch.manual_seed(0)
net = Net()
optimizer = torch.optim.SGD(net.parameters(), lr=1e-3)
a, target = torch.randn(10, 1), torch.randn(10, 1)
for step in range(3):
    loss = F.mse_loss(net(a), target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
