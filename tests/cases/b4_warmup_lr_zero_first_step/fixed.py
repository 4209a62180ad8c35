"""The fixed twin: the warmup factor starts above zero, so the first step updates the weights."""
import torch
from torch import nn
from torch.optim.lr_scheduler import LambdaLR

num_warmup_steps = 10


def lr_lambda(current_step):
    if current_step < num_warmup_steps:
        return float(current_step + 1) / float(max(1, num_warmup_steps))
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
