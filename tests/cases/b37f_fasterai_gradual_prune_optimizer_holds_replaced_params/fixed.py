"""Gradual structured pruning during training (FasterAI-Labs/fasterai#92): the PruneCallback prunes with
torch-pruning in before_step, which replaces the nn.Parameter objects of the shrunk layers; the optimizer
that fit() built still holds the old ones, so after the first prune the pruned layers never change."""
import torch
from torch import nn
import torch.nn.functional as F


def prune_parameter_and_grad(weight, keep_idxs, dim):
    """As torch-pruning does: a new, smaller nn.Parameter (and its grad) holding the kept slices."""
    new = nn.Parameter(torch.index_select(weight.data, dim, keep_idxs))
    if weight.grad is not None:
        new.grad = torch.index_select(weight.grad, dim, keep_idxs)
    return new


def prune_hidden_units(model, n_keep):
    """Structured prune of fc1's output units (and fc2's matching input columns) by L1 norm."""
    keep = model.fc1.weight.detach().abs().sum(1).argsort(descending=True)[:n_keep].sort().values
    model.fc1.weight = prune_parameter_and_grad(model.fc1.weight, keep, 0)
    model.fc1.bias = prune_parameter_and_grad(model.fc1.bias, keep, 0)
    model.fc2.weight = prune_parameter_and_grad(model.fc2.weight, keep, 1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(12, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class PruneCallback:
    def __init__(self, schedule):
        self.schedule = schedule  # iteration -> number of hidden units to keep

    def before_step(self, learn):
        if learn.iter in self.schedule:
            prune_hidden_units(learn.model, self.schedule[learn.iter])
            live = list(learn.model.parameters())  # re-point the optimizer at the live parameters
            learn.opt.param_groups[0]["params"] = live
            for p in list(learn.opt.state):
                if not any(p is q for q in live):
                    del learn.opt.state[p]


class Learner:
    def __init__(self, model, cbs):
        self.model, self.cbs = model, cbs

    def fit(self, n_iter, x, y, lr=0.1):
        self.opt = torch.optim.SGD(self.model.parameters(), lr=lr, momentum=0.9)
        for self.iter in range(n_iter):
            loss = F.cross_entropy(self.model(x), y)
            loss.backward()
            for cb in self.cbs:
                cb.before_step(self)
            self.opt.step()
            self.opt.zero_grad()
            if self.iter == 4:
                self.snapshot = self.model.fc1.weight.detach().clone()
        return loss


torch.manual_seed(0)
x, y = torch.randn(64, 12), torch.randint(0, 4, (64,))
learn = Learner(Net(), [PruneCallback({2: 24, 4: 16})])
loss = learn.fit(12, x, y)
n_live = len(list(learn.model.parameters()))
n_held = sum(any(p is q for q in learn.model.parameters()) for g in learn.opt.param_groups for p in g["params"])
print(f"final loss {loss.item():.4f}; optimizer holds {n_held} of {n_live} live parameters")
print("fc1 max |dW| after the last prune:", (learn.model.fc1.weight.detach() - learn.snapshot).abs().max().item())
