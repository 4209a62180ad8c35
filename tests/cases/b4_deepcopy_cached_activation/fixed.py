"""The fixed twin: the activation stays a local variable, as the reporter found."""
from copy import deepcopy
import torch
import torch.nn as nn


class test(nn.Module):
    def __init__(self):
        super(test, self).__init__()
        self.con1 = nn.Conv2d(1, 2, 3)
        self.con2 = nn.Conv2d(2, 1, 3)

    def forward(self, x):
        if True:
            return self.func(x)

    def func(self, x):
        exp = None
        x = self.con1(x)
        x = self.con2(x)
        exp = x
        return exp


torch.manual_seed(0)
model = test()
input = torch.randn(1, 1, 16, 16)
output = model(input)
copyModel = deepcopy(model)
print("copied:", type(copyModel).__name__, output.shape)
