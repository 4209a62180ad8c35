"""PyTorch issue #12756 "Autograd isn't functioning when networks's parameters are taken from other networks",
https://github.com/pytorch/pytorch/issues/12756 (forum twin: discuss.pytorch.org/t/27424).
The user has three networks A, B and C of the same architecture and sets C's weights to a convex combination of
A's and B's with `c_param.data = weight * a_param + (1 - weight) * b_param`, then runs C forward, calls backward
and steps an optimizer over A and B. A and B never get gradients: assigning to `.data` copies only the values of
the combination into C's leaf parameters, so the graph back to A and B is dropped and the loss only reaches C's
own (unoptimized) leaves. Fix: do not write the combination into C's parameters; evaluate C at the combined
weights (the user ended up writing them into C._parameters; here torch.func.functional_call does the same
thing cleanly)."""
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear_layers = nn.ModuleList([nn.Linear(4, 8), nn.Linear(8, 1)])

    def forward(self, x):
        x = torch.relu(self.linear_layers[0](x))
        return self.linear_layers[1](x)


a, b = Net(), Net()
c = Net().requires_grad_(False)
weight = 0.3
optimiser = torch.optim.SGD(list(a.parameters()) + list(b.parameters()), lr=0.1)
x, target = torch.randn(16, 4), torch.randn(16, 1)
a_before = a.linear_layers[0].weight.detach().clone()

for step in range(5):
    c_params = {}
    for (name, a_param), b_param in zip(a.named_parameters(), b.parameters()):
        c_params[name] = weight * a_param + (1 - weight) * b_param
    y = torch.func.functional_call(c, c_params, (x,))
    loss = ((y - target) ** 2).mean()
    optimiser.zero_grad()
    loss.backward()
    optimiser.step()

print("A grad is None:", a.linear_layers[0].weight.grad is None)
print("B grad is None:", b.linear_layers[0].weight.grad is None)
print("A changed:", not torch.equal(a_before, a.linear_layers[0].weight))
