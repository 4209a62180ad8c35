"""replicate/cog: a Predictor that fine-tunes inside predict() never learns.

Source: https://github.com/replicate/cog/issues/1681
What the user saw: predict() runs a few training steps; loss.backward() raised "element 0 of tensors
does not require grad and does not have a grad_fn". After adding loss.requires_grad_(True) the error
went away, but every weight's .grad stayed None, the weights never changed and the loss never fell.
Why: predict() carried a @torch.inference_mode() decorator, so the forward pass recorded no graph;
requires_grad_(True) only turns the loss itself into a leaf, nothing flows back to the model.
Fix (the user's own): remove the inference_mode decorator from predict() (and the requires_grad_ hack).
"""
import torch
import torch.nn as nn

torch.manual_seed(0)


class Predictor:  # stands in for cog.BasePredictor
    def setup(self):
        self.model = nn.Linear(4, 1)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    @torch.inference_mode()  # <- no_grad
    def predict(self, x, y, steps=5):
        for step in range(steps):
            self.optimizer.zero_grad()
            loss = ((self.model(x) - y) ** 2).mean()
            loss.requires_grad_(True)  # the workaround that silenced the error
            loss.backward()
            self.optimizer.step()
            print(f"step {step} loss {loss.item():.4f} weight.grad {self.model.weight.grad}")
        return self.model(x)


x = torch.randn(16, 4)
y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]])
p = Predictor()
p.setup()
before = p.model.weight.detach().clone()
p.predict(x, y)
print("weight changed:", not torch.equal(before, p.model.weight.detach()))
