"""DP-SGD with Opacus (meta-pytorch/opacus#432, from #431): the code passes model.parameters() to the optimizer and
only then calls `model = ModuleValidator.fix(model)`, which replaces the BatchNorm layers (not allowed under DP)
with GroupNorm; "the parameters of these new layers are not tracked by optimizer" ("Calling fix() before defining
optimizer should work")."""
import torch
import torch.nn.functional as F
from torch import nn


class ModuleValidator:
    @staticmethod
    def fix(module):
        for name, child in module.named_children():
            if isinstance(child, nn.BatchNorm2d):
                setattr(module, name, nn.GroupNorm(min(32, child.num_features), child.num_features, affine=True))
            else:
                ModuleValidator.fix(child)
        return module


torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
model = ModuleValidator.fix(model)  # <- optimizer
images, labels = torch.randn(16, 3, 8, 8), torch.randint(0, 10, (16,))
norm_before = model[1].weight.detach().clone()
for step in range(3):
    loss = F.cross_entropy(model(images), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"{type(model[1]).__name__} weight grad set: {model[1].weight.grad is not None}; "
      f"changed: {not torch.equal(model[1].weight, norm_before)}")
