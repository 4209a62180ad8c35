"""PyTorch-Feedback-Alignment-Layers issue #1, https://github.com/jordan-g/PyTorch-Feedback-Alignment-Layers/issues/1:
LinearFA implements feedback alignment with a module backward hook that replaces the gradient sent back to the
layer's input by grad_output @ weight_fa (a fixed random matrix). The hook assumes grad_input is laid out as
(bias, input, weight^T), the layout of addmm, and swaps slot 1. With LinearFA(..., bias=False) the op is a plain
mm whose grad_input is (input, weight^T), so slot 1 is the weight's gradient and the replacement has the input's
shape: loss.backward() raises "hook 'linear_fa_backward_hook' has changed the size of value". The author
confirmed (bias=False was broken) and fixed it; the fix here picks the input's slot from whether the layer has a
bias. The hook, layer and MNIST-sized MLP follow the repo; data is random."""
import math
import warnings
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn import init
from torch.nn.parameter import Parameter

warnings.filterwarnings("ignore", message=".*non-full backward hook.*")
torch.manual_seed(0)


def linear_fa_backward_hook(module, grad_input, grad_output):
    i = 1 if module.bias is not None else 0
    if grad_input[i] is not None:
        grad_input_fa = grad_output[0].mm(module.weight_fa)
        return grad_input[:i] + (grad_input_fa,) + grad_input[i + 1:]


class LinearFA(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.weight = Parameter(torch.empty(out_features, in_features))
        self.weight_fa = torch.empty(out_features, in_features)
        self.bias = Parameter(torch.empty(out_features)) if bias else None
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        init.kaiming_uniform_(self.weight_fa, a=math.sqrt(5))
        if self.bias is not None:
            init.uniform_(self.bias, -1 / math.sqrt(in_features), 1 / math.sqrt(in_features))
        self.register_backward_hook(linear_fa_backward_hook)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = LinearFA(64, 32, bias=False)
        self.fc2 = LinearFA(32, 10, bias=False)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
fc1_before = model.fc1.weight.detach().clone()
for step in range(5):
    data, target = torch.randn(16, 64), torch.randint(0, 10, (16,))
    optimizer.zero_grad()
    loss = F.cross_entropy(model(data), target)
    loss.backward()
    optimizer.step()
print("fc1.weight changed:", not torch.equal(fc1_before, model.fc1.weight))
