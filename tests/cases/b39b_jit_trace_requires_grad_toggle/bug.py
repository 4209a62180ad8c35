# A wrapper module switches requires_grad of the wrapped model's weight on and
# off inside forward, and the wrapper is compiled with torch.jit.trace before
# the training loop.
import torch
from torch import nn, jit
from torch.optim import SGD

torch.manual_seed(0)

inputs = torch.tensor([2.0])
target = torch.tensor(1.0)
model = nn.Linear(1, 1, bias=False)
optimizer = SGD(model.parameters(), lr=1e-1)


class MyModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = model

    def forward(self, x):
        param = next(self.parameters())

        param.requires_grad = True
        x = self.model(x).mean()
        param.requires_grad = False  # <- autograd_error
        return x


c = MyModule()
forward = jit.trace(c, (inputs,))

for step in range(3):
    result = forward(inputs)
    loss = (result - target) ** 2
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    print(f"step {step} loss {loss.item():.4f} weight {model.weight.item():.4f}")
