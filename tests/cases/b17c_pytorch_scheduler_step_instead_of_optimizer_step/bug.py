"""PyTorch: calling scheduler.step() in place of optimizer.step() leaves the weights untouched.

Source: https://github.com/pytorch/pytorch/issues/3814
What the user saw: nothing trained; only after comparing the weights between steps did they notice the
weights never changed. They had assumed the LR scheduler wraps the optimizer and steps it.
Why: lr_scheduler.step() only rewrites param_group['lr']; it never applies the gradients. loss.backward()
fills .grad, optimizer.zero_grad() clears it again, and no optimizer.step() ever runs.
Fix: call optimizer.step() after loss.backward() (and scheduler.step() once per epoch).
"""
import torch
import torch.nn as nn

torch.manual_seed(0)

model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
x = torch.randn(32, 4)
y = x.sum(dim=1, keepdim=True)
before = model[0].weight.detach().clone()

for epoch in range(3):
    for xb, yb in zip(x.split(8), y.split(8)):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        scheduler.step()  # <- optimizer
    print(f"epoch {epoch} loss {loss.item():.4f} lr {optimizer.param_groups[0]['lr']:.4f}")

print("weight changed:", not torch.equal(before, model[0].weight.detach()))
