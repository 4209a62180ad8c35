"""pytorch/pytorch issue #666, "nn.Module not importing parameters contained in lists".
https://github.com/pytorch/pytorch/issues/666

What the user saw: a net built with `self.list_of_layers = [nn.Linear(1, 1) for i in range(num_layers)]`
prints (and reports through parameters()) only `self.layer`; the layers in the list are missing.
Why: nn.Module registers submodules only when they are assigned as attributes (or held by
nn.ModuleList/ModuleDict); a plain Python list hides them, so model.parameters() -- and the optimizer
built from it -- never sees them. They get gradients in backward but are never stepped.
Fix (maintainer, linking the forum thread): keep the layers in nn.ModuleList.
"""
import torch
import torch.nn as nn

torch.manual_seed(0)


class net(nn.Module):
    def __init__(self, num_layers):
        super(net, self).__init__()
        self.layer = nn.Linear(1, 1)
        self.list_of_layers = [nn.Linear(1, 1) for i in range(num_layers)]  # <- non_parameter_tensor

    def forward(self, x):
        x = self.layer(x)
        for l in self.list_of_layers:
            x = torch.tanh(l(x))
        return x


n = net(4)
print(n)
print("registered parameters:", len(list(n.parameters())))
opt = torch.optim.SGD(n.parameters(), lr=0.1)
x = torch.linspace(-1, 1, 16).unsqueeze(1)
y = 0.5 * x
before = n.list_of_layers[0].weight.detach().clone()
for step in range(5):
    opt.zero_grad()
    loss = ((n(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
print("list layer 0 weight changed:", not torch.equal(before, n.list_of_layers[0].weight.detach()))
