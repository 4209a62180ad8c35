"""theneuralbase.com, "Freezing base model weights" (pytorch/learn/intermediate/freezing-base-model-weights): a
ResNet-18 is frozen, its fc replaced, and the Adam optimizer built from `filter(lambda p: p.requires_grad, ...)`;
mid-training layer4 is unfrozen (requires_grad = True) and training goes on with the same optimizer, whose
param_groups were fixed when it was built: layer4 now gets gradients every step but is in no optimizer and never
changes. The page's fix: recreate the optimizer after unfreezing (fc at 1e-3, layer4 at 1e-4)."""
import torch
import torch.nn.functional as F
from torch import nn
from torchvision import models

torch.manual_seed(0)
model = models.resnet18(weights=None)
for param in model.parameters():
    param.requires_grad = False
model.fc = nn.Linear(model.fc.in_features, 10)
optimizer = torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), lr=1e-3)  # <- optimizer
images, labels = torch.randn(4, 3, 32, 32), torch.randint(0, 10, (4,))


def train_steps(n):
    for _ in range(n):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
    return loss.item()


print(f"head only: loss {train_steps(2):.4f}")
for param in model.layer4.parameters():
    param.requires_grad = True
optimizer = torch.optim.Adam([
    {"params": model.fc.parameters(), "lr": 1e-3},
    {"params": model.layer4.parameters(), "lr": 1e-4},
])
layer4_before = model.layer4[1].conv2.weight.detach().clone()
print(f"layer4 unfrozen: loss {train_steps(2):.4f}")
before = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
train_steps(1)
for name, p in model.named_parameters():
    if p.requires_grad:
        assert p.grad is not None and not torch.equal(p, before[name]), name
print("layer4 and fc got gradients and changed")
