# ValueError: Per sample gradient is not initialized. Not updated in backward pass?
# https://github.com/meta-pytorch/opacus/issues/502
# What went wrong: the model declared `self.dense_agsx = nn.Linear(2, 10)` in __init__ but never
# used it in forward(). Its parameters are registered and handed to the DP optimizer, but no
# gradient ever reaches them, so DPOptimizer.step() fails while collecting per-sample gradients.
# Fix (reporter, confirmed in the thread): drop the layer that forward() never uses.
# Opacus' DPOptimizer is rewritten below as small plain-torch code (same class/method names);
# the per-sample gradient read is represented by the parameter's .grad.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self, in_features=8, hidden=16, n_classes=2):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, n_classes)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        return self.fc2(x)


class DPOptimizer:
    """Minimal stand-in for opacus.optimizers.DPOptimizer: clip, add noise, step."""

    def __init__(self, optimizer, *, noise_multiplier, max_grad_norm, expected_batch_size):
        self.original_optimizer = optimizer
        self.noise_multiplier = noise_multiplier
        self.max_grad_norm = max_grad_norm
        self.expected_batch_size = expected_batch_size

    @property
    def params(self):
        return [p for group in self.original_optimizer.param_groups for p in group["params"]]

    def _get_flat_grad_sample(self, p):
        if p.grad is None:
            raise ValueError("Per sample gradient is not initialized. Not updated in backward pass?")
        return p.grad

    @property
    def grad_samples(self):
        return [self._get_flat_grad_sample(p) for p in self.params if p.requires_grad]

    def clip_and_accumulate(self):
        grads = self.grad_samples
        total_norm = torch.norm(torch.stack([g.norm(2) for g in grads]), 2)
        clip_factor = (self.max_grad_norm / (total_norm + 1e-6)).clamp(max=1.0)
        for p in self.params:
            p.summed_grad = p.grad * clip_factor

    def add_noise(self):
        for p in self.params:
            noise = torch.normal(0, self.noise_multiplier * self.max_grad_norm, p.summed_grad.shape)
            p.grad = (p.summed_grad + noise / self.expected_batch_size).view_as(p)

    def zero_grad(self):
        self.original_optimizer.zero_grad()

    def step(self):
        self.clip_and_accumulate()
        self.add_noise()
        self.original_optimizer.step()


model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
optimizer = DPOptimizer(optimizer, noise_multiplier=1.0, max_grad_norm=1.0, expected_batch_size=32)
criterion = nn.CrossEntropyLoss()

x = torch.randn(32, 8)
y = torch.randint(0, 2, (32,))
for epoch in range(3):
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.4f}")
