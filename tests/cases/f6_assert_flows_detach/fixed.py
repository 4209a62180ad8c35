import torch
from torch import nn

from gradcheck_l2c import assert_grad_flows

torch.manual_seed(0)
model = nn.Linear(4, 1)
x, y = torch.randn(8, 4), torch.randn(8, 1)


def train_step():
    pred = model(x)
    loss = ((pred - y) ** 2).mean()
    loss.backward()


assert_grad_flows(train_step)
