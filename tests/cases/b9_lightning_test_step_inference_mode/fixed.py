"""The fixed twin: the Trainer is built with inference_mode=False, so enable_grad() in test_step works (Lightning-
AI/pytorch-lightning#19910)."""
import torch
from torch import nn


class Trainer:
    def __init__(self, inference_mode=True):
        self.inference_mode = inference_mode

    def test(self, model, batches):
        with torch.inference_mode(self.inference_mode), torch.no_grad():
            return [model.test_step(batch) for batch in batches]


class KalmanNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.f = nn.Linear(4, 4)

    def test_step(self, batch):
        obs = batch
        with torch.enable_grad():
            state = torch.zeros_like(obs, requires_grad=True)
            first = None
            for _ in range(20):
                loss = ((self.f(state) - obs) ** 2).sum()
                first = loss.item() if first is None else first
                (grad,) = torch.autograd.grad(loss, state)
                state = (state - 0.05 * grad).detach().requires_grad_()
        return round(first, 3), round(loss.item(), 3)


torch.manual_seed(0)
model = KalmanNet().requires_grad_(False)
trainer = Trainer(inference_mode=False)
print("test loss (first, last refinement step):", trainer.test(model, [torch.randn(8, 4) for _ in range(2)]))
