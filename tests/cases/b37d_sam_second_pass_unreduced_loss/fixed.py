"""The fixed twin: the second pass reduces the per-sample losses to a scalar before its backward."""
import torch
from torch import nn
import torch.nn.functional as F


class SAM(torch.optim.Optimizer):
    def __init__(self, params, base_optimizer, rho=0.05, **kwargs):
        defaults = dict(rho=rho, **kwargs)
        super().__init__(params, defaults)
        self.base_optimizer = base_optimizer(self.param_groups, **kwargs)
        self.param_groups = self.base_optimizer.param_groups

    @torch.no_grad()
    def first_step(self, zero_grad=False):
        grad_norm = torch.norm(torch.stack([p.grad.norm(p=2) for g in self.param_groups for p in g["params"] if p.grad is not None]), p=2)
        for group in self.param_groups:
            scale = group["rho"] / (grad_norm + 1e-12)
            for p in group["params"]:
                if p.grad is None:
                    continue
                e_w = p.grad * scale.to(p)
                p.add_(e_w)
                self.state[p]["e_w"] = e_w
        if zero_grad:
            self.zero_grad()

    @torch.no_grad()
    def second_step(self, zero_grad=False):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None or "e_w" not in self.state[p]:
                    continue
                p.sub_(self.state[p]["e_w"])
        self.base_optimizer.step()
        if zero_grad:
            self.zero_grad()


class ResNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.layer1 = nn.Conv2d(8, 8, 3, padding=1)
        self.linear = nn.Linear(8, num_classes)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out1 = F.relu(self.layer1(out))
        outf = F.adaptive_avg_pool2d(out1, 1).flatten(1)
        out = self.linear(outf)
        return out, outf, [out, out1]


torch.manual_seed(0)
models = {"backbone": ResNet()}
criterion = nn.CrossEntropyLoss(reduction="none")
optim_backbone = SAM(models["backbone"].parameters(), torch.optim.SGD, lr=0.1, momentum=0.9, weight_decay=5e-4)
optimizers = {"backbone": optim_backbone}

for it in range(3):
    inputs, labels = torch.randn(16, 3, 8, 8), torch.randint(0, 10, (16,))
    scores, _, features = models["backbone"](inputs)
    target_loss = criterion(scores, labels)
    m_backbone_loss = torch.sum(target_loss) / target_loss.size(0)
    loss = m_backbone_loss
    # first forward-backward pass
    loss.backward()
    optimizers["backbone"].first_step(zero_grad=True)
    # second forward-backward pass
    criterion(models["backbone"](inputs)[0], labels).mean().backward()
    optimizers["backbone"].second_step(zero_grad=True)
    print(f"iter {it}: loss {loss.item():.4f}")
