"""Custom autograd.Functions: a clamp with a straight-through backward (ctx.save_for_backward), a
binarised weight with once_differentiable, and a gradient-reversal layer for domain adaptation."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd.function import once_differentiable


class StraightThroughClamp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(-1, 1)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * (x.abs() <= 2).to(grad_output.dtype)


class BinarizeWeight(torch.autograd.Function):
    @staticmethod
    def forward(ctx, weight):
        return weight.sign()

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        return grad_output


class GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lambd):
        ctx.lambd = lambd
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.neg() * ctx.lambd, None


class BinaryLinear(nn.Linear):
    def forward(self, x):
        return F.linear(x, BinarizeWeight.apply(self.weight), self.bias)


class DANN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(6, 16), nn.ReLU())
        self.binary = BinaryLinear(16, 16)
        self.label = nn.Linear(16, 2)
        self.domain = nn.Linear(16, 2)

    def forward(self, x, lambd):
        h = StraightThroughClamp.apply(self.binary(self.features(x)))
        return self.label(h), self.domain(GradReverse.apply(h, lambd))


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = DANN()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y, d = torch.randn(32, 6), torch.randint(0, 2, (32,)), torch.randint(0, 2, (32,))
    for step in range(4):
        optimizer.zero_grad()
        label_logits, domain_logits = model(x, 0.5)
        loss = F.cross_entropy(label_logits, y) + F.cross_entropy(domain_logits, d)
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
