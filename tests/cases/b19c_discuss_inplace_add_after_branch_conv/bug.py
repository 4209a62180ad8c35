"""PyTorch forums, "When would the error 'one of the variables needed for gradient computation has been
modified' occur?" (https://discuss.pytorch.org/t/when-would-the-error-one-of-the-variables-needed-for-gradient-computation-has-been-modified-occur/11976):
the user's forward bifurcates the data flow,
    x = self.conv1(input)    # main branch
    x_p = self.conv1_p(x)    # another branch
    x += some_layer          # main branch
Symptom: backward raises "RuntimeError: one of the variables needed for gradient computation has been
modified by an inplace operation"; it works with x = x + some_layer.
Why (the answer): conv1_p saved x to compute its backward (the weight gradient needs its input); x += ...
overwrites that same tensor in place, so conv1_p's backward can no longer run.
Fix: write the main branch out of place, x = x + some_layer."""
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv1_p = nn.Conv2d(8, 8, 3, padding=1)
        self.conv_s = nn.Conv2d(3, 8, 1)

    def forward(self, input):
        some_layer = self.conv_s(input)
        x = self.conv1(input)  # main branch
        x_p = self.conv1_p(x)  # another branch
        x += some_layer  # main branch  # <- inplace_saved
        return x, x_p


torch.manual_seed(0)
net = Net()
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
input, target = torch.randn(2, 3, 8, 8), torch.randn(2, 8, 8, 8)
before = net.conv1_p.weight.detach().clone()
for step in range(3):
    x, x_p = net(input)
    loss = ((x - target) ** 2).mean() + ((x_p - target) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss={loss.item():.4f}")
print("conv1_p changed:", not torch.equal(before, net.conv1_p.weight))
