import torch
import torch.nn as nn

torch.manual_seed(0)


# Custom weight-gradient computation: 'input' is the input of a Linear layer of the
# model, 'layer' is that layer, 'cast' is the ratio of grad_output to output.
def compute_grad(input, layer, cast):
    x = input.clone().detach()
    cast = cast.clone().detach()
    x.requires_grad = True

    # Create an identical linear layer without backward
    func = nn.Linear(in_features=layer.in_features, out_features=layer.out_features, bias=True)
    # Import parameter dictionary
    func.load_state_dict(layer.state_dict())

    y = func(x)  # <- no_grad
    # The anomaly is: the grad_fn of y is None, but y.is_leaf is True
    print("y.grad_fn:", y.grad_fn)
    print("y.is_leaf:", y.is_leaf)
    dy = y * cast
    dy.sum().backward()
    dw = func.weight.grad
    print("dw:", None if dw is None else dw.norm())
    return dw


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


saved = {}
custom_grads = {}


def forward_hook(module, inp, out):
    saved[module] = (inp[0], out)


def backward_hook(module, grad_input, grad_output):
    inp, out = saved[module]
    cast = grad_output[0] / out
    custom_grads[module] = compute_grad(inp, module, cast)


model = Net()
for layer in (model.fc1, model.fc2):
    layer.register_forward_hook(forward_hook)
    layer.register_full_backward_hook(backward_hook)

criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

x = torch.randn(32, 8)
target = torch.randint(0, 4, (32,))

for step in range(2):
    optimizer.zero_grad()
    loss = criterion(model(x), target)
    loss.backward()
    for name, layer in (("fc1", model.fc1), ("fc2", model.fc2)):
        print(name, "custom dw:", custom_grads[layer].norm().item())
    optimizer.step()
    print("step", step, "loss", loss.item())
