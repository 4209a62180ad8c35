"""Tony-Y/pytorch_warmup issue #12, "Why did my learning rate drop from the initial lr",
https://github.com/Tony-Y/pytorch_warmup/issues/12: the reporter runs, in every batch,
loss.backward(); optimizer.zero_grad(); optimizer.step(); with warmup_scheduler.dampening(): lr_scheduler.step()
and sees no warmup. The maintainer: "Your code does not optimize model parameters at all because
optimizer.zero_grad() is called after loss.backward()": each step() finds the gradients just cleared (None) and
skips every parameter, so the CNN never changes while the learning rate prints as if it trained.
Fix: call zero_grad() before the forward/backward (the line moves). pytorch_warmup's LinearWarmup is a short
stand-in with the same dampening() protocol; EMNIST is replaced by seeded random 28x28 batches."""
from contextlib import contextmanager
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)


class LinearWarmup:
    """pytorch_warmup.LinearWarmup, in short: lr *= min(1, (step + 1) / warmup_period)."""
    def __init__(self, optimizer, warmup_period):
        self.optimizer, self.warmup_period, self.last_step = optimizer, warmup_period, -1
        self.lrs = [group["lr"] for group in optimizer.param_groups]
        self.dampen()

    def dampen(self):
        self.last_step += 1
        omega = min(1.0, (self.last_step + 1) / self.warmup_period)
        for group, lr in zip(self.optimizer.param_groups, self.lrs):
            group["lr"] = lr * omega

    @contextmanager
    def dampening(self):
        for group, lr in zip(self.optimizer.param_groups, self.lrs):
            group["lr"] = lr
        yield
        self.lrs = [group["lr"] for group in self.optimizer.param_groups]
        self.dampen()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.fc1 = nn.Linear(16 * 12 * 12, 32)
        self.fc2 = nn.Linear(32, 47)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(x)))), 2)
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


model = Net()
optimizer = torch.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.01)
lr_scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=20)
warmup_scheduler = LinearWarmup(optimizer, warmup_period=5)
train_loader = [(torch.randn(16, 1, 28, 28), torch.randint(0, 47, (16,))) for _ in range(8)]
conv1_before = model.conv1.weight.detach().clone()

model.train()
for batch_idx, (data, target) in enumerate(train_loader):
    optimizer.zero_grad()
    output = model(data)
    loss = F.cross_entropy(output, target)
    loss.backward()
    optimizer.step()
    with warmup_scheduler.dampening():
        lr_scheduler.step()
    print(f"batch {batch_idx}: loss {loss.item():.4f} lr {optimizer.param_groups[0]['lr']:.5f}")

print("conv1 weight changed:", not torch.equal(conv1_before, model.conv1.weight))
