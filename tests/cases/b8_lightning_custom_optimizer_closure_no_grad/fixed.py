"""The fixed twin of lightning_custom_optimizer_closure_no_grad (https://github.com/Lightning-AI/pytorch-lightning/issues/18222)."""
import torch
import torch.nn.functional as F
from torch import nn


class SignSGD(torch.optim.Optimizer):
    def __init__(self, params, lr=0.01):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self, closure=None):
        with torch.enable_grad():
            loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(p.grad.sign(), alpha=-group["lr"])
        return loss


torch.manual_seed(0)
model = nn.Linear(6, 2)
optimizer = SignSGD(model.parameters())
x, y = torch.randn(16, 6), torch.randint(0, 2, (16,))


def closure():
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    return loss


for step in range(5):
    loss = optimizer.step(closure)
    print(f"step {step}: loss {loss.item():.4f}")
