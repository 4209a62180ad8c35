"""PyTorch forum thread "When should I use nn.ModuleList and when should I use nn.Sequential?", reply 18,
https://discuss.pytorch.org/t/when-should-i-use-nn-modulelist-and-when-should-i-use-nn-sequential/5463/18: a user
builds a module with a variable number of 1x1 conv layers and keeps them in a plain Python list
(`self.layers = []` then `self.layers.append(nn.Conv2d(...))`, "Module1"), next to the same module built with
nn.ModuleList ("Module2"). Counting the parameters with their getNumParams helper shows the list version has none
of the conv parameters: the convs are not registered submodules, so model.parameters() (and the optimizer built
from it) does not contain them. They still run in forward and even receive .grad, but no optimizer ever steps them:
they keep their random initial values for the whole training, only the registered head learns.
Fix (the reply's point): store the layers in nn.ModuleList. The training loop with a registered 1x1 head and
random data is added around the thread's module so that it trains; dIn/dOut/numLayers follow the thread."""
import numpy as np
import torch as tr
import torch.nn as nn


def getNumParams(params):
    numParams, numTrainable = 0, 0
    for param in params:
        npParamCount = np.prod(param.data.shape)
        numParams += npParamCount
        if param.requires_grad:
            numTrainable += npParamCount
    return numParams, numTrainable


# Using list
class Module1(nn.Module):
    def __init__(self, dIn, dOut, numLayers):
        super(Module1, self).__init__()
        self.layers = nn.ModuleList()
        for i in range(numLayers - 1):
            self.layers.append(nn.Conv2d(in_channels=dIn, out_channels=dIn, kernel_size=1))
            self.layers.append(nn.ReLU())
        self.layers.append(nn.Conv2d(in_channels=dIn, out_channels=dIn, kernel_size=1))
        self.head = nn.Conv2d(in_channels=dIn, out_channels=dOut, kernel_size=1)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


tr.manual_seed(0)
tr.set_num_threads(1)
model = Module1(dIn=3, dOut=2, numLayers=3)
print("getNumParams(model.parameters()):", getNumParams(model.parameters()))
optimizer = tr.optim.SGD(model.parameters(), lr=0.1)
first_conv = model.layers[0]
w_before = first_conv.weight.detach().clone()
for step in range(5):
    x = tr.randn(4, 3, 8, 8)
    y = tr.randn(4, 2, 8, 8)
    loss = nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

print("first conv weight changed:", not tr.equal(w_before, first_conv.weight))
