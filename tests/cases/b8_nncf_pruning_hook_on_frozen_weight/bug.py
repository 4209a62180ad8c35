"""Filter pruning wrapped around a detector whose first backbone stage is frozen (openvinotoolkit/nncf#199): the
pruning algorithm registers a gradient-masking hook on every conv weight, and the frozen one raises "cannot register
a hook on a tensor that doesn't require gradient"."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
backbone = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU())
head = nn.Conv2d(8, 2, 1)
for p in backbone[0].parameters():
    p.requires_grad = False
masks = {}
for module in [*backbone, head]:
    if isinstance(module, nn.Conv2d):
        mask = torch.ones(module.out_channels, 1, 1, 1)
        masks[module] = mask
        module.weight.register_hook(lambda grad, mask=mask: grad * mask)  # <- autograd_error
params = [p for p in [*backbone.parameters(), *head.parameters()] if p.requires_grad]
optimizer = torch.optim.SGD(params, lr=0.01)
images, targets = torch.randn(2, 3, 8, 8), torch.randint(0, 2, (2, 8, 8))
for step in range(3):
    loss = F.cross_entropy(head(backbone(images)), targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
