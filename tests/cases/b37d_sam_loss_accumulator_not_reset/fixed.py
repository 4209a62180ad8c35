"""The fixed twin: the loss accumulator is reset before the second pass sums its task losses."""
import torch
from torch import nn


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
                self.state[p]["old_p"] = p.data.clone()
                p.add_(p.grad * scale.to(p))
        if zero_grad:
            self.zero_grad()

    @torch.no_grad()
    def second_step(self, zero_grad=False):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                p.data = self.state[p]["old_p"]
        self.base_optimizer.step()
        if zero_grad:
            self.zero_grad()


class Classifier(nn.Module):
    def __init__(self, num_tasks):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.heads = nn.ModuleList([nn.Linear(8, 1) for _ in range(num_tasks)])

    def forward(self, x):
        feat = self.backbone(x)
        return [head(feat) for head in self.heads], feat


def get_loss(output, target, t):
    loss_t = nn.functional.binary_cross_entropy_with_logits(output[t].view(-1), target[:, t])
    acc_t = ((output[t].view(-1) > 0).float() == target[:, t]).float().mean()
    return loss_t, acc_t


torch.manual_seed(0)
num_tasks = 3
model = Classifier(num_tasks)
optimizer = SAM(model.parameters(), torch.optim.SGD, lr=0.01, momentum=0.9)
loss_sum = [0.0] * num_tasks
acc_sum = [0.0] * num_tasks

for step in range(3):
    image = torch.randn(8, 1, 16, 16)
    target = torch.randint(0, 2, (8, num_tasks)).float()
    output, logit_map = model(image)

    loss = 0
    for t in range(num_tasks):
        loss_t, acc_t = get_loss(output, target, t)
        loss += loss_t
        loss_sum[t] += loss_t.item()
        acc_sum[t] += acc_t.item()

    optimizer.zero_grad()
    loss.backward()
    optimizer.first_step(zero_grad=True)
    output, logit_map = model(image)

    loss = 0
    for t in range(num_tasks):
        loss_t, acc_t = get_loss(output, target, t)
        loss += loss_t
        loss_sum[t] += loss_t.item()
        acc_sum[t] += acc_t.item()
    loss.backward()
    optimizer.second_step(zero_grad=True)
    print(f"step {step}: loss {loss.item():.4f}")
