# A pass-through autograd.Function (used to hook the start of backward, as for
# DDP) is applied to the model's tuple of outputs.
import torch
import torch.nn as nn
from torch.autograd import Function

torch.manual_seed(0)


class PassThrough(Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input

    @staticmethod
    def backward(ctx, grad_outputs):
        print(f"grad_outputs {grad_outputs}")
        return grad_outputs


class MyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 1, bias=False)
        self.b = nn.Linear(4, 1, bias=False)

    def forward(self, x):
        a, b = self.a(x), self.b(x)
        ret = a, b
        print(f"In fwd pass {ret[0].requires_grad}")
        ret = PassThrough.apply(ret)  # <- autograd_error
        print(f"After passthrough {ret[0].requires_grad}")
        return ret


model = MyModel()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
inp = torch.ones(2, 4)
target = torch.zeros(2, 1)

for step in range(2):
    opt.zero_grad()
    out = model(inp)
    loss = ((out[0] + out[1] - target) ** 2).mean()
    loss.backward()
    opt.step()
    print(step, loss.item(), model.a.weight.grad)
