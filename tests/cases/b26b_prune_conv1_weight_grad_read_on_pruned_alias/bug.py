"""PyTorch issue #102245 "Gradient not calculated for pruned weights",
https://github.com/pytorch/pytorch/issues/102245: after prune.random_unstructured(model.conv1, name="weight"),
the user trains the LeNet and prints model.conv1.weight.grad, which is None, while conv2.weight.grad is filled,
and concludes that pruned layers get no gradient.
Why: pruning re-parametrises the layer. The learnable leaf is now conv1.weight_orig (an nn.Parameter), and
conv1.weight is recomputed as weight_orig * weight_mask by a forward pre-hook on every call, so it is a
non-leaf tensor whose .grad is never populated. The gradient is there, on weight_orig, and the optimizer
(built from model.parameters(), which holds weight_orig) updates it.
Fix: read the gradient of the leaf, model.conv1.weight_orig.grad (the pruned entries of it are 0 because of the
mask). The issue's `y = model1(x)` typo is written as `model(x)`; a few SGD steps are added."""
import torch
from torch import nn
import torch.nn.utils.prune as prune

torch.manual_seed(0)


class LeNet(nn.Module):
    def __init__(self):
        super(LeNet, self).__init__()
        self.conv1 = nn.Conv2d(1, 2, 3)
        self.conv2 = nn.Conv2d(2, 1, 3)

    def forward(self, x):
        x = self.conv1(x)
        x = self.conv2(x)
        return x


model = LeNet()
prune.random_unstructured(model.conv1, name="weight", amount=0.3)

lossfn = nn.L1Loss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

x = torch.ones(1, 24, 24, requires_grad=True)
z = torch.ones(1, 20, 20)
for step in range(3):
    optimizer.zero_grad()
    y = model(x)
    loss = lossfn(z, y)
    loss.backward()
    optimizer.step()

print("conv1 weight grad:", model.conv1.weight.grad)  # <- non_leaf_watched
print("conv2 weight grad is None:", model.conv2.weight.grad is None)
