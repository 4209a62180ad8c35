"""Avalanche (ContinualAI/avalanche) issue #1116 "LwF gradient backpropagation",
https://github.com/ContinualAI/avalanche/issues/1116: in LwFPlugin.penalty, for a MultiTaskModule the current
model's outputs of all heads are recomputed inside the `with torch.no_grad():` block meant for the previous
model, so `y_curr['0'].requires_grad` is False; the maintainers confirmed the bug.
At run time the distillation penalty carries no gradient: the old task's head (in the optimizer, trained only by
the penalty while learning task 1) gets grad None and never changes, and the backbone gets only the CE gradient.
Fix: compute y_curr with gradients (Avalanche moved it out of the no_grad block; here the line is wrapped in
torch.enable_grad() to keep line numbers). avalanche.models (MultiTaskModule, avalanche_forward) and the Naive
strategy loop are a few lines of stand-in."""
import copy

import torch
import torch.nn as nn


# --- avalanche.models stand-in ---------------------------------------------------------------
class MultiTaskModule(nn.Module):
    def forward_all_tasks(self, x):
        return {task: self.forward_single_task(x, task) for task in self.classifiers}

    def forward(self, x, task_labels):
        return self.forward_single_task(x, task_labels)


class MTSimpleMLP(MultiTaskModule):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(10, 16), nn.ReLU())
        self.classifiers = nn.ModuleDict({'0': nn.Linear(16, 2), '1': nn.Linear(16, 2)})

    def forward_single_task(self, x, task_label):
        return self.classifiers[task_label](self.features(x))


def avalanche_forward(model, x, task_labels):
    if isinstance(model, MultiTaskModule):
        if task_labels is None:
            return model.forward_all_tasks(x)
        return model(x, task_labels)
    return model(x)


# --- avalanche/training/plugins/lwf.py -------------------------------------------------------
class LwFPlugin:
    def __init__(self, alpha=1, temperature=2):
        self.alpha = alpha
        self.temperature = temperature
        self.prev_model = None
        self.prev_classes = {'0': set()}

    def _distillation_loss(self, out, prev_out, active_units):
        au = list(active_units)
        log_p = torch.log_softmax(out / self.temperature, dim=1)[:, au]
        q = torch.softmax(prev_out / self.temperature, dim=1)[:, au]
        res = torch.nn.functional.kl_div(log_p, q, reduction='batchmean')
        return res

    def penalty(self, out, x, alpha, curr_model):
        if self.prev_model is None:
            return 0
        else:
            with torch.no_grad():
                if isinstance(self.prev_model, MultiTaskModule):
                    # output from previous output heads.
                    y_prev = avalanche_forward(self.prev_model, x, None)
                    # in a multitask scenario we need to compute the output
                    # from all the heads, so we need to call forward again.
                    y_curr = avalanche_forward(curr_model, x, None)  # <- no_grad
                else:  # no task labels
                    y_prev = {'0': self.prev_model(x)}
                    y_curr = {'0': out}

            dist_loss = 0
            for task_id in y_prev.keys():
                # compute kd only for previous heads.
                if task_id in self.prev_classes:
                    yp = y_prev[task_id]
                    yc = y_curr[task_id]
                    au = self.prev_classes[task_id]
                    dist_loss += self._distillation_loss(yc, yp, au)
            return alpha * dist_loss

    def before_backward(self, strategy):
        strategy.loss += self.penalty(strategy.mb_output, strategy.mb_x, self.alpha, strategy.model)

    def after_training_exp(self, strategy, task_id, classes):
        self.prev_model = copy.deepcopy(strategy.model)
        self.prev_classes[task_id] = set(classes)


# --- the Naive strategy's training loop, in short --------------------------------------------
class Naive:
    def __init__(self, model, plugin):
        self.model, self.plugin = model, plugin

    def train(self, experience, task_id, classes):
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.5)  # reset each experience
        for self.mb_x, mb_y in experience:
            self.optimizer.zero_grad()
            self.mb_output = avalanche_forward(self.model, self.mb_x, task_id)
            self.loss = nn.functional.cross_entropy(self.mb_output, mb_y)
            self.plugin.before_backward(self)
            self.loss.backward()
            self.optimizer.step()
        self.plugin.after_training_exp(self, task_id, classes)


torch.manual_seed(0)
model = MTSimpleMLP()
strategy = Naive(model, LwFPlugin())
exp0 = [(torch.randn(8, 10), torch.randint(0, 2, (8,))) for _ in range(3)]
exp1 = [(torch.randn(8, 10) + 1.0, torch.randint(0, 2, (8,))) for _ in range(3)]
strategy.train(exp0, '0', [0, 1])
old_head = model.classifiers['0'].weight.detach().clone()
strategy.train(exp1, '1', [0, 1])
print("old head grad is None:", model.classifiers['0'].weight.grad is None)
print("old head changed while learning task 1:", not torch.equal(old_head, model.classifiers['0'].weight))
