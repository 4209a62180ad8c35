"""Learning-rate range test (Smith 2017) that trains the real model with an exponentially increasing LR,
then restores the model and optimizer from cached state_dicts; training then starts from the restored
weights with the suggested LR.

Source: https://github.com/davidtvs/pytorch-lr-finder (torch_lr_finder/lr_finder.py: LRFinder,
StateCacher, ExponentialLR, _train_batch, suggestion by steepest gradient).

Patterns kept (all right):
- `StateCacher.store` keeps `copy.deepcopy(model.state_dict())` and of `optimizer.state_dict()` before
  the range test; `reset()` calls `model.load_state_dict(...)` and `optimizer.load_state_dict(...)`
  afterwards. The restore writes the same Parameter objects in place, so the optimizer still holds them.
- In `_train_batch`, `loss /= accumulation_steps` is an in-place division on a graph tensor before its
  backward (DivBackward is recorded), and `total_loss += loss` accumulates already-backwarded losses
  only to return `total_loss.item()`.
- Losses are smoothed and compared as Python floats (`.item()`); the range test stops early on divergence.
- The custom `ExponentialLR(LRScheduler)` rewrites `param_group["lr"]` each iteration; after the reset the
  LR is set by hand in `param_groups` for the real run.
- The suggestion uses `np.gradient` on the recorded losses: bookkeeping outside autograd.
"""
import copy
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import LRScheduler


class StateCacher(object):
    def __init__(self, in_memory=True):
        self.in_memory = in_memory
        self.cached = {}

    def store(self, key, state_dict):
        self.cached.update({key: copy.deepcopy(state_dict)})

    def retrieve(self, key):
        if key not in self.cached:
            raise KeyError("Target {} was not cached.".format(key))
        return self.cached.get(key)


class ExponentialLR(LRScheduler):
    def __init__(self, optimizer, end_lr, num_iter, last_epoch=-1):
        self.end_lr = end_lr
        if num_iter <= 1:
            raise ValueError("`num_iter` must be larger than 1")
        self.num_iter = num_iter
        super(ExponentialLR, self).__init__(optimizer, last_epoch)

    def get_lr(self):
        r = self.last_epoch / (self.num_iter - 1)
        return [base_lr * (self.end_lr / base_lr) ** r for base_lr in self.base_lrs]


class LRFinder(object):
    def __init__(self, model, optimizer, criterion):
        self.optimizer = optimizer
        self.model = model
        self.criterion = criterion
        self.history = {"lr": [], "loss": []}
        self.best_loss = None
        self.state_cacher = StateCacher(True)
        self.state_cacher.store("model", self.model.state_dict())
        self.state_cacher.store("optimizer", self.optimizer.state_dict())

    def reset(self):
        self.model.load_state_dict(self.state_cacher.retrieve("model"))
        self.optimizer.load_state_dict(self.state_cacher.retrieve("optimizer"))

    def _set_learning_rate(self, new_lrs):
        if not isinstance(new_lrs, list):
            new_lrs = [new_lrs] * len(self.optimizer.param_groups)
        for param_group, new_lr in zip(self.optimizer.param_groups, new_lrs):
            param_group["lr"] = new_lr

    def range_test(self, train_iter, start_lr=None, end_lr=10, num_iter=100, smooth_f=0.05, diverge_th=5,
                   accumulation_steps=1):
        self.history = {"lr": [], "loss": []}
        self.best_loss = None
        if start_lr:
            self._set_learning_rate(start_lr)
        lr_schedule = ExponentialLR(self.optimizer, end_lr, num_iter)
        for iteration in range(num_iter):
            loss = self._train_batch(train_iter, accumulation_steps)
            self.history["lr"].append(lr_schedule.get_last_lr()[0])
            lr_schedule.step()
            if iteration == 0:
                self.best_loss = loss
            else:
                if smooth_f > 0:
                    loss = smooth_f * loss + (1 - smooth_f) * self.history["loss"][-1]
                if loss < self.best_loss:
                    self.best_loss = loss
            self.history["loss"].append(loss)
            if loss > diverge_th * self.best_loss:
                print("Stopping early, the loss has diverged")
                break
        print("Learning rate search finished.")

    def _train_batch(self, train_iter, accumulation_steps):
        self.model.train()
        total_loss = None
        self.optimizer.zero_grad()
        for i in range(accumulation_steps):
            inputs, labels = next(train_iter)
            outputs = self.model(inputs)
            loss = self.criterion(outputs, labels)
            loss /= accumulation_steps
            loss.backward()
            if total_loss is None:
                total_loss = loss
            else:
                total_loss += loss
        self.optimizer.step()
        return total_loss.item()

    def suggestion(self, skip_start=1, skip_end=1):
        lrs = self.history["lr"][skip_start:-skip_end]
        losses = self.history["loss"][skip_start:-skip_end]
        min_grad_idx = (np.gradient(np.array(losses))).argmin()
        return lrs[min_grad_idx]


def batches(x, y, bs):
    while True:
        perm = torch.randperm(len(x))
        for i in range(0, len(x) - bs + 1, bs):
            yield x[perm[i:i + bs]], y[perm[i:i + bs]]


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    x = torch.randn(256, 10)
    y = (x[:, :3].sum(1) > 0).long() + (x[:, 3] > 1).long()
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-7, weight_decay=1e-2)
    train_iter = batches(x, y, 32)

    lr_finder = LRFinder(model, optimizer, criterion)
    lr_finder.range_test(train_iter, end_lr=10, num_iter=16, accumulation_steps=2)
    lr = lr_finder.suggestion()
    print(f"suggested lr {lr:.2e}")
    lr_finder.reset()  # model and optimizer back to their initial state

    for g in optimizer.param_groups:
        g["lr"] = lr
    for step in range(6):
        inputs, labels = next(train_iter)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(inputs), labels)
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.4f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
