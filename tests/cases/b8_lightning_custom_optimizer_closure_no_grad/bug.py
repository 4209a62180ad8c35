"""A custom optimizer under Lightning's automatic optimization (Lightning-AI/pytorch-lightning#18222): its step() is
decorated with @torch.no_grad() and calls the closure that runs training_step, so the loss is built without grad and
backward raises "element 0 of tensors does not require grad"; torch's own optimizers enable grad around the closure."""
import torch
import torch.nn.functional as F
from torch import nn


class SignSGD(torch.optim.Optimizer):
    def __init__(self, params, lr=0.01):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure()  # <- no_grad
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
