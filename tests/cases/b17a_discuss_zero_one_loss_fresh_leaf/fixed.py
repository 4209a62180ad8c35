"""PyTorch forums, "Built-in 0-1 loss function?" (https://discuss.pytorch.org/t/built-in-0-1-loss-function/216747):
the user writes a 0-1 loss as a module that compares the predicted labels with the targets and returns
`torch.tensor(0., requires_grad=True)` or `torch.tensor(1., requires_grad=True)`. backward() runs without an error,
but the loss is a fresh leaf with no history: the classifier's weights get no gradient (None) and never change.
As K. Frank answers, the if-else on predicted labels is not differentiable and requires_grad=True on the return
value does not fix it. Fix: train on a differentiable surrogate of the logits (cross-entropy), keep 0-1 as a metric."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ZeroOneLoss(torch.nn.Module):
    def __init__(self):
        super(ZeroOneLoss, self).__init__()

    def forward(self, input, target):
        if input.equal(target):
            return torch.tensor(0., requires_grad=True)
        else:
            return torch.tensor(1., requires_grad=True)


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 3))
criterion = ZeroOneLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(32, 5)
y = torch.randint(0, 3, (32,))
w_before = model[0].weight.detach().clone()
for step in range(5):
    optimizer.zero_grad()
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    loss.backward()
    optimizer.step()
print("loss:", loss.item(), "first layer grad:", model[0].weight.grad)
print("first layer changed:", not torch.equal(w_before, model[0].weight.detach()))
