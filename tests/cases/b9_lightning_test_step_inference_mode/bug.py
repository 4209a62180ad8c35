"""Gradients inside test_step (Lightning-AI/pytorch-lightning#19910, "working as intended"): the Trainer runs
test_step under torch.inference_mode() by default, so the test-time refinement that differentiates a loss raises
"element 0 of tensors does not require grad and does not have a grad_fn" even inside torch.enable_grad(); the
Trainer must be built with inference_mode=False. A minimal Trainer stands in for Lightning's."""
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
trainer = Trainer()  # <- no_grad
print("test loss (first, last refinement step):", trainer.test(model, [torch.randn(8, 4) for _ in range(2)]))
