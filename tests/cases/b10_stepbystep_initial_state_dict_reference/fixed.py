"""The fixed twin: the initial state is deep-copied before any training (dvgodoy/PyTorchStepByStep#28)."""
import copy

import torch
import torch.optim as optim
from torch import nn

torch.manual_seed(42)
x = torch.rand(100, 1)
y = 1 + 2 * x + 0.1 * torch.randn(100, 1)
model = nn.Sequential()
model.add_module('linear', nn.Linear(1, 1))
loss_fn = nn.MSELoss(reduction='mean')
model_state = copy.deepcopy(model.state_dict())
for name, make_optimizer in [("SGD", lambda p: optim.SGD(p, lr=0.1)), ("Adam", lambda p: optim.Adam(p, lr=0.1))]:
    model.load_state_dict(model_state)
    print(f"{name} starts from weight {model.linear.weight.item():.4f}, bias {model.linear.bias.item():.4f}")
    optimizer = make_optimizer(model.parameters())
    for epoch in range(10):
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"{name} ends at weight {model.linear.weight.item():.4f}, loss {loss.item():.4f}")
