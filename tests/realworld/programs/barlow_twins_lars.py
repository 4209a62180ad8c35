"""Barlow Twins, reduced from facebookresearch/barlowtwins (main.py: BarlowTwins, off_diagonal,
LARS, exclude_bias_and_norm, adjust_learning_rate; https://github.com/facebookresearch/barlowtwins).
A backbone (torchvision resnet50 with fc = nn.Identity, here a tiny conv stand-in) and a bias-free
projector learn with the repo's own LARS optimizer so that the cross-correlation matrix of the two
views' batch-normalised embeddings approaches the identity.

Suspicious-but-correct patterns kept: the final normaliser nn.BatchNorm1d(affine=False) has no
parameters, only running-stat buffers; the cross-correlation matrix is modified in place
(c.div_(batch_size), torch.diagonal(c).add_(-1).pow_(2), off_diagonal(c).pow_(2)) and all-reduced in
place (a no-op stand-in for one process); parameters are split into a weights group and a biases /
BatchNorm group (param.ndim == 1) whose learning rates are written by hand every step from a warmup
+ cosine schedule (0 at step 0); LARS.step runs under @torch.no_grad, skips p.grad None, excludes 1-d
parameters from weight decay and trust-ratio scaling, and keeps its momentum in self.state[p]['mu'];
the loss is logged with loss.item() into a json-like stats dict.
"""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class TinyResNet(nn.Module):
    """Stand-in for torchvision.models.resnet50(zero_init_residual=True): stem, one residual block whose
    last BatchNorm weight starts at zero, global pooling, fc."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        nn.init.constant_(self.bn2.weight, 0)  # zero_init_residual
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(x + self.bn2(self.conv2(x)))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def all_reduce(tensor):
    """torch.distributed.all_reduce stand-in (sum over one process: in place, unchanged)."""
    return tensor


def off_diagonal(x):
    # return a flattened view of the off-diagonal elements of a square matrix
    n, m = x.shape
    assert n == m
    return x.flatten()[:-1].view(n - 1, n + 1)[:, 1:].flatten()


class BarlowTwins(nn.Module):
    def __init__(self, batch_size, projector="32-32-32", lambd=0.0051):
        super().__init__()
        self.batch_size = batch_size
        self.lambd = lambd
        self.backbone = TinyResNet()
        self.backbone.fc = nn.Identity()

        # projector
        sizes = [16] + list(map(int, projector.split("-")))
        layers = []
        for i in range(len(sizes) - 2):
            layers.append(nn.Linear(sizes[i], sizes[i + 1], bias=False))
            layers.append(nn.BatchNorm1d(sizes[i + 1]))
            layers.append(nn.ReLU(inplace=True))
        layers.append(nn.Linear(sizes[-2], sizes[-1], bias=False))
        self.projector = nn.Sequential(*layers)

        # normalization layer for the representations z1 and z2
        self.bn = nn.BatchNorm1d(sizes[-1], affine=False)

    def forward(self, y1, y2):
        z1 = self.projector(self.backbone(y1))
        z2 = self.projector(self.backbone(y2))

        # empirical cross-correlation matrix
        c = self.bn(z1).T @ self.bn(z2)

        # sum the cross-correlation matrix between all gpus
        c.div_(self.batch_size)
        all_reduce(c)

        on_diag = torch.diagonal(c).add_(-1).pow_(2).sum()
        off_diag = off_diagonal(c).pow_(2).sum()
        loss = on_diag + self.lambd * off_diag
        return loss


class LARS(torch.optim.Optimizer):
    def __init__(self, params, lr, weight_decay=0, momentum=0.9, eta=0.001,
                 weight_decay_filter=None, lars_adaptation_filter=None):
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, eta=eta,
                        weight_decay_filter=weight_decay_filter, lars_adaptation_filter=lars_adaptation_filter)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self):
        for g in self.param_groups:
            for p in g["params"]:
                dp = p.grad
                if dp is None:
                    continue
                if g["weight_decay_filter"] is None or not g["weight_decay_filter"](p):
                    dp = dp.add(p, alpha=g["weight_decay"])
                if g["lars_adaptation_filter"] is None or not g["lars_adaptation_filter"](p):
                    param_norm = torch.norm(p)
                    update_norm = torch.norm(dp)
                    one = torch.ones_like(param_norm)
                    q = torch.where(param_norm > 0.0,
                                    torch.where(update_norm > 0, (g["eta"] * param_norm / update_norm), one), one)
                    dp = dp.mul(q)
                param_state = self.state[p]
                if "mu" not in param_state:
                    param_state["mu"] = torch.zeros_like(p)
                mu = param_state["mu"]
                mu.mul_(g["momentum"]).add_(dp)
                p.add_(mu, alpha=-g["lr"])


def exclude_bias_and_norm(p):
    return p.ndim == 1


def adjust_learning_rate(optimizer, step, batch_size, epochs, loader_len, lr_weights=0.2, lr_biases=0.0048):
    max_steps = epochs * loader_len
    warmup_steps = 10 * loader_len
    base_lr = batch_size / 256
    if step < warmup_steps:
        lr = base_lr * step / warmup_steps
    else:
        step -= warmup_steps
        max_steps -= warmup_steps
        q = 0.5 * (1 + math.cos(math.pi * step / max_steps))
        end_lr = base_lr * 0.001
        lr = base_lr * q + end_lr * (1 - q)
    optimizer.param_groups[0]["lr"] = lr * lr_weights
    optimizer.param_groups[1]["lr"] = lr * lr_biases


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    batch_size, epochs, loader_len = 16, 20, 1
    model = BarlowTwins(batch_size=batch_size)
    param_weights = []
    param_biases = []
    for param in model.parameters():
        if param.ndim == 1:
            param_biases.append(param)
        else:
            param_weights.append(param)
    parameters = [{"params": param_weights}, {"params": param_biases}]
    optimizer = LARS(parameters, lr=0, weight_decay=1e-6,
                     weight_decay_filter=exclude_bias_and_norm, lars_adaptation_filter=exclude_bias_and_norm)

    for step in range(6):
        x = torch.randn(16, 3, 8, 8)
        y1 = x + 0.1 * torch.randn_like(x)
        y2 = torch.flip(x, dims=[3]) + 0.1 * torch.randn_like(x)
        adjust_learning_rate(optimizer, step, batch_size, epochs, loader_len)
        optimizer.zero_grad()
        loss = model.forward(y1, y2)
        loss.backward()
        optimizer.step()
        stats = dict(step=step, lr_weights=optimizer.param_groups[0]["lr"],
                     lr_biases=optimizer.param_groups[1]["lr"], loss=loss.item())
        print(f"step {step} loss {loss.item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
