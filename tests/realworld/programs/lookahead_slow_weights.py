"""Lookahead optimizer wrapping SGD: k fast steps, then the fast weights are pulled towards the cached slow
weights and the slow copy is refreshed; validation temporarily swaps in the slow weights and swaps back.

Source: https://github.com/michaelrzhang/lookahead (lookahead_pytorch.py), the paper authors' PyTorch
implementation (Zhang et al. 2019), used as in its CIFAR example.

Patterns kept (all right):
- `Lookahead` subclasses `Optimizer` without calling its `__init__`: it forwards `param_groups`,
  `zero_grad`, `state_dict` to the inner optimizer and keeps per-parameter `cached_params` in its own
  `state`; the inner SGD holds every model parameter.
- Every `la_steps` steps `p.data.mul_(alpha).add_(cached, alpha=1 - alpha)` then `cached.copy_(p.data)`:
  the interpolation is an optimizer update, done on `.data` after `optimizer.step()` and outside autograd.
- `pullback_momentum="pullback"` rescales the inner SGD's `momentum_buffer` in place the same way.
- `_backup_and_load_cache()` copies the slow weights into the parameters for evaluation (under
  `torch.no_grad()`), `_clear_and_load_backup()` puts the fast weights back before training continues.
"""
import os
from collections import defaultdict

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.optimizer import Optimizer


class Lookahead(Optimizer):
    def __init__(self, optimizer, la_steps=5, la_alpha=0.8, pullback_momentum="none"):
        self.optimizer = optimizer
        self._la_step = 0
        self.la_alpha = la_alpha
        self._total_la_steps = la_steps
        pullback_momentum = pullback_momentum.lower()
        assert pullback_momentum in ["reset", "pullback", "none"]
        self.pullback_momentum = pullback_momentum
        self.state = defaultdict(dict)
        for group in optimizer.param_groups:
            for p in group["params"]:
                param_state = self.state[p]
                param_state["cached_params"] = torch.zeros_like(p.data)
                param_state["cached_params"].copy_(p.data)
                if self.pullback_momentum == "pullback":
                    param_state["cached_mom"] = torch.zeros_like(p.data)

    def __getstate__(self):
        return {"state": self.state, "optimizer": self.optimizer, "la_alpha": self.la_alpha,
                "_la_step": self._la_step, "_total_la_steps": self._total_la_steps,
                "pullback_momentum": self.pullback_momentum}

    def zero_grad(self, set_to_none=True):
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def get_la_step(self):
        return self._la_step

    def state_dict(self):
        return self.optimizer.state_dict()

    def load_state_dict(self, state_dict):
        self.optimizer.load_state_dict(state_dict)

    def _backup_and_load_cache(self):
        for group in self.optimizer.param_groups:
            for p in group["params"]:
                param_state = self.state[p]
                param_state["backup_params"] = torch.zeros_like(p.data)
                param_state["backup_params"].copy_(p.data)
                p.data.copy_(param_state["cached_params"])

    def _clear_and_load_backup(self):
        for group in self.optimizer.param_groups:
            for p in group["params"]:
                param_state = self.state[p]
                p.data.copy_(param_state["backup_params"])
                del param_state["backup_params"]

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    def step(self, closure=None):
        loss = self.optimizer.step(closure)
        self._la_step += 1
        if self._la_step >= self._total_la_steps:
            self._la_step = 0
            for group in self.optimizer.param_groups:
                for p in group["params"]:
                    param_state = self.state[p]
                    p.data.mul_(self.la_alpha).add_(param_state["cached_params"], alpha=1.0 - self.la_alpha)
                    param_state["cached_params"].copy_(p.data)
                    if self.pullback_momentum == "pullback":
                        internal_momentum = self.optimizer.state[p]["momentum_buffer"]
                        self.optimizer.state[p]["momentum_buffer"] = internal_momentum.mul_(self.la_alpha).add_(
                            param_state["cached_mom"], alpha=1.0 - self.la_alpha)
                        param_state["cached_mom"] = self.optimizer.state[p]["momentum_buffer"]
                    elif self.pullback_momentum == "reset":
                        self.optimizer.state[p]["momentum_buffer"] = torch.zeros_like(p.data)
        return loss


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8 * 4 * 4, 5)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return self.fc(x.flatten(1))


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    x = torch.randn(160, 1, 8, 8)
    y = torch.randint(0, 5, (160,))
    x[torch.arange(160), 0, y, y] += 3.0
    xv, yv = x[128:], y[128:]
    model = Net()
    base_optim = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    optimizer = Lookahead(base_optim, la_steps=3, la_alpha=0.5, pullback_momentum="pullback")
    for epoch in range(2):
        model.train()
        for i in range(0, 128, 16):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x[i:i + 16]), y[i:i + 16])
            loss.backward()
            optimizer.step()
            print(f"epoch {epoch} iter {i // 16} loss {loss.item():.4f} la_step {optimizer.get_la_step()}")
        optimizer._backup_and_load_cache()
        model.eval()
        with torch.no_grad():
            acc = (model(xv).argmax(1) == yv).float().mean()
        optimizer._clear_and_load_backup()
        print(f"epoch {epoch} slow-weight val acc {acc.item():.3f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
