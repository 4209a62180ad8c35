"""vmikulik/maml-pytorch issue #2, "torch.autograd.grad gives None",
https://github.com/vmikulik/maml-pytorch/issues/2

The repository's MAML (MAML-Sines.ipynb) runs the inner loop on `temp_weights = [w.clone() for w in self.weights]`
through a hand-written `parameterised(x, weights)` forward, then takes
`meta_grads = torch.autograd.grad(meta_loss, self.weights)`. The reporter's model has many conv layers, so instead of
writing a parameterised forward they `deepcopy` the model for the inner loop, update the copy, and compute the
query loss with it. The meta gradient then fails: "RuntimeError: One of the differentiated Tensors appears to not
have been used in the graph". The answer: "Unless carefully done, deepcopy breaks the computational graph" - the copy's
parameters are new leaves with no history back to `self.weights`, so the meta loss never reaches them.
Fix: keep the inner-loop weights as clones of `self.weights` (graph-connected) and run the unchanged module on them
with torch.func.functional_call, which needs no hand-written parameterised forward.
Sine tasks are generated here; the model is the notebook's MLP standing in for the reporter's conv net.
"""
import copy
from collections import OrderedDict

import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)
np.random.seed(0)


class SineTask:
    def __init__(self, amplitude, phase):
        self.amplitude, self.phase = amplitude, phase

    def sample_data(self, size=1):
        x = torch.rand(size, 1) * 10 - 5
        return x, self.amplitude * torch.sin(x - self.phase)


class MAMLModel(nn.Module):
    def __init__(self):
        super(MAMLModel, self).__init__()
        self.model = nn.Sequential(OrderedDict([
            ('l1', nn.Linear(1, 40)), ('relu1', nn.ReLU()),
            ('l2', nn.Linear(40, 40)), ('relu2', nn.ReLU()),
            ('l3', nn.Linear(40, 1))]))

    def forward(self, x):
        return self.model(x)


class MAML():
    def __init__(self, model, inner_lr, meta_lr, K=10, inner_steps=1, tasks_per_meta_batch=4):
        self.model = model
        self.weights = list(model.parameters())
        self.criterion = nn.MSELoss()
        self.meta_optimiser = torch.optim.Adam(self.weights, meta_lr)
        self.inner_lr, self.K = inner_lr, K
        self.inner_steps, self.tasks_per_meta_batch = inner_steps, tasks_per_meta_batch

    def inner_loop(self, task):
        # reset inner model to current maml weights
        temp_model = copy.deepcopy(self.model)  # <- autograd_error
        X, y = task.sample_data(self.K)
        for step in range(self.inner_steps):
            loss = self.criterion(temp_model(X), y) / self.K
            grad = torch.autograd.grad(loss, list(temp_model.parameters()))
            with torch.no_grad():
                for w, g in zip(temp_model.parameters(), grad):
                    w -= self.inner_lr * g
        X, y = task.sample_data(self.K)
        return self.criterion(temp_model(X), y) / self.K

    def main_loop(self, num_iterations):
        for iteration in range(1, num_iterations + 1):
            meta_loss = 0
            for i in range(self.tasks_per_meta_batch):
                task = SineTask(np.random.uniform(0.1, 5), np.random.uniform(0, np.pi))
                meta_loss += self.inner_loop(task)
            meta_grads = torch.autograd.grad(meta_loss, self.weights)
            for w, g in zip(self.weights, meta_grads):
                w.grad = g
            self.meta_optimiser.step()
            print("{}/{}. loss: {:.4f}".format(iteration, num_iterations,
                                              meta_loss.item() / self.tasks_per_meta_batch))


maml = MAML(MAMLModel(), inner_lr=0.01, meta_lr=0.001)
before = maml.weights[0].detach().clone()
maml.main_loop(num_iterations=3)
print("meta weights changed:", not torch.equal(before, maml.weights[0]))
