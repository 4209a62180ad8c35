"""FARM: the linear warmup schedule ends before training does, so the last steps run at LR 0.

Source: https://github.com/deepset-ai/FARM/issues/46
What the user saw: "Training beyond specified 't_total'. Learning rate multiplier set to 0." and a
learning-rate curve that reaches 0 before the last epoch ends; the last optimizer steps change nothing.
Why: calculate_optimization_steps() floors n_examples / batch_size per epoch, but the data loader yields
the last partial batch too, so every epoch has one optimizer step more than t_total counts. With several
epochs the schedule hits t_total early and BertAdam's warmup_linear multiplier stays 0 until the end.
Fix (#54): round the number of batches per epoch up (ceil) when computing t_total.
"""
import math

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)


def calculate_optimization_steps(n_examples, batch_size, grad_acc_steps, n_epochs):
    optimization_steps = math.ceil(n_examples / batch_size / grad_acc_steps) * n_epochs
    return optimization_steps


def warmup_linear(x, warmup=0.1):  # BertAdam's schedule, x = step / t_total
    if x < warmup:
        return x / warmup
    return max((x - 1.0) / (warmup - 1.0), 0)


n_examples, batch_size, grad_acc_steps, n_epochs = 90, 8, 1, 3
X = torch.randn(n_examples, 4)
Y = X @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]])
train_loader = DataLoader(TensorDataset(X, Y), batch_size=batch_size)
model = nn.Linear(4, 1)
t_total = calculate_optimization_steps(n_examples, batch_size, grad_acc_steps, n_epochs)
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: warmup_linear(step / t_total))

step = 0
for epoch in range(n_epochs):
    for x, y in train_loader:
        before = model.weight.detach().clone()
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        scheduler.step()
        step += 1
        changed = not torch.equal(before, model.weight.detach())
        print(f"epoch {epoch} step {step}/{t_total} lr {optimizer.param_groups[0]['lr']:.4f} loss {loss.item():.3f} weight changed {changed}")
