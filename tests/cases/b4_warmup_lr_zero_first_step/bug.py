"""A linear-warmup schedule (huggingface/transformers#34754) returns a factor of 0 at step 0, so the
first optimizer step runs with lr=0: a one-step smoke run computes gradients but changes no weight."""
import torch
from torch import nn
from torch.optim.lr_scheduler import LambdaLR

num_warmup_steps = 10


def lr_lambda(current_step):
    if current_step < num_warmup_steps:
        return float(current_step) / float(max(1, num_warmup_steps))  # <- no_update
    return 1.0


torch.manual_seed(0)
model = nn.Linear(4, 1)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
scheduler = LambdaLR(optimizer, lr_lambda)
x, y = torch.randn(16, 4), torch.randn(16, 1)
before = model.weight.detach().clone()
loss = nn.functional.mse_loss(model(x), y)
loss.backward()
optimizer.step()
scheduler.step()
lr_used = optimizer.param_groups[0]["initial_lr"] * lr_lambda(0)
print(f"loss {loss.item():.4f} grad {model.weight.grad.norm():.4f} lr used {lr_used}")
print("weights changed after the first step:", not torch.equal(before, model.weight))
