"""The L2C question's script ("alpha.grad is always None"), made runnable with every bug left in.

The model and the training loop below are the question's code, statement for statement and in the same
order. Added only what it leaves undefined (``compute_mixing_weights``, ``compute_test_acc``,
``tqdm_output``, the three loader lists, ``neighbour_sets``, ``log``, ``T``, ``S``, ``beta``, ``T_0``,
``K_0``; ``k`` is the loop's own first line), sized to run in seconds: 3 nodes, a few tiny synthetic images
from `reference.data`, 2 rounds. The ``pdb.set_trace()`` line is dropped and the loop sits in ``train()``
(it ends in ``return``). Run ``python reference/seed_l2c.py`` or ``python -m reference.seed_l2c``: it prints
``gradient of alpha is None`` once per node and round, as its author saw. The corrected algorithm is
`reference.l2c`.

The bugs, by line (tests/test_seed_l2c.py checks that each named line holds the quoted code).
What the question's answer names:

* line 121 ``self.alpha = nn.Parameter(`` and line 124 ``def forward(self, x):`` -- alpha is not used in
  ``forward``. True, but not the fault: in L2C alpha reaches the loss through the aggregated weights,
  never through ``forward``; it is that path (lines 188 and 192) that is broken.
* line 122 ``self.w = torch.randn((100, 100), requires_grad=True)`` -- a plain tensor attribute, not a
  Parameter or buffer: no optimizer, ``state_dict`` or ``.to(device)`` sees it. The answer also blames
  line 177 ``model.w = model.w.clone()`` and line 178 ``model.w[i] = compute_mixing_weights(`` for cutting
  the gradient; that is wrong: writing into a cloned tensor is recorded by autograd (CopySlices) and the
  gradient reaches alpha through it.
* line 192 ``model.load_state_dict(theta_next)`` -- copies the aggregate into the parameters under
  ``no_grad``: the weights the validation loss sees are plain leaves again, with no link to alpha (it also
  overwrites alpha itself with ``theta_next['alpha']``). A second, independent cut.
* line 200 ``model.alpha.requires_grad_(True)`` and line 205 ``model.alpha.retain_grad()`` -- redundant
  on a Parameter; harmless, and they cannot help.

What the answer misses:

* line 188 ``model.w[i][j].item()`` -- the real cut: ``.item()`` turns the mixing weight into a Python
  float, so the aggregate does not depend on alpha at all. This alone makes ``alpha.grad`` None.
* line 146 ``theta = [model.state_dict().copy() for _ in range(k)]`` (also lines 147, 149, 216, 217) --
  ``dict.copy()`` is shallow and ``state_dict()`` tensors share storage with the live parameters, so every
  snapshot follows every SGD step: ``theta[i]`` and ``theta_half[i]`` are the same numbers, Δθ (line 173)
  is always zero, and all nodes share one model.
* line 137 ``device = torch.device("cuda" if not torch.cuda.is_available() else "cpu")`` -- the check is
  inverted: it picks "cuda" exactly when there is no GPU. Kept verbatim; line 138, not in the question,
  falls back to the CPU when that choice cannot work, so the script runs on any machine (on a GPU machine
  the inverted check itself picks the CPU).
* line 188 ``delta_theta[i][name][j]`` -- indexes row j of node i's own tensor instead of neighbour j's
  change ``delta_theta[j][name]`` (it only runs because every first dimension exceeds the node count).
* line 141 ``optimizer = optim.SGD(model.parameters(), lr=0.1)`` and line 142
  ``l2c_optimizer = optim.Adam([model.alpha]`` -- ``model.parameters()`` includes alpha, so alpha sits in
  two optimizers: local SGD would move it with the training loss whenever it had a gradient.
* line 214 ``neighbour_sets[i].delete(j)`` -- sets have ``remove``/``discard``, no ``delete``; and line
  213 ``key=lambda x: w[i][x]`` names an undefined ``w`` (``model.w`` was meant). Both run only when
  ``t == T_0``; ``T_0 = T`` here keeps them unreached so the gradient bug can be seen.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset
from tqdm import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm

synthetic = __import__(f"{__package__}.data" if __package__ else "data", fromlist=["synthetic"]).synthetic

log = logging.getLogger("seed_l2c")

T = 2  # communication rounds
S = 1  # local epochs
beta = 0.1  # learning rate of alpha
T_0 = T  # round of edge removal: t never equals T, so the `.delete` bug stays unreached
K_0 = 1  # edges each node removes at T_0

_data = synthetic(3, clusters=1, train=16, val=8, test=16)
train_loaders = [DataLoader(TensorDataset(n.train_x, n.train_y), batch_size=8) for n in _data.nodes]
val_loaders = [DataLoader(TensorDataset(n.val_x, n.val_y), batch_size=8) for n in _data.nodes]
test_loaders = [DataLoader(TensorDataset(n.test_x, n.test_y), batch_size=8) for n in _data.nodes]
neighbour_sets = [{j for j in range(len(_data.nodes)) if j != i} for i in range(len(_data.nodes))]


def compute_mixing_weights(alpha_i, neighbours):
    """Softmax of alpha_i over the neighbours' entries, as a full row (zeros elsewhere)."""
    mask = torch.zeros_like(alpha_i, dtype=torch.bool)
    mask[list(neighbours)] = True
    return torch.softmax(alpha_i.masked_fill(~mask, float("-inf")), dim=0)


def compute_test_acc(model, loader, device, test_accuracies, i):
    """Store node i's test accuracy in ``test_accuracies[i]`` and return the list."""
    correct = total = 0
    with torch.no_grad():
        for inputs, labels in loader:
            outputs = model(inputs.to(device))
            correct += (outputs.argmax(dim=1) == labels.to(device)).sum().item()
            total += len(labels)
    test_accuracies[i] = correct / total
    return test_accuracies


@contextmanager
def tqdm_output(bar):
    """Route log records through the bar while it runs."""
    with logging_redirect_tqdm(), bar:
        yield bar


def runnable(device):
    """The CPU when ``device`` is CUDA on a machine without it, else ``device`` (not in the question)."""
    return torch.device("cpu") if device.type == "cuda" and not torch.cuda.is_available() else device


class CNNCifar(nn.Module):
    def __init__(self):
        super(CNNCifar, self).__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)
        self.alpha = nn.Parameter(torch.randn(100, 100), requires_grad=True)
        self.w = torch.randn((100, 100), requires_grad=True)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.view(-1, 16 * 5 * 5)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return F.log_softmax(x, dim=1)


def train():
    """The question's training loop, verbatim but for the dropped pdb line and the device fallback."""
    k = len(neighbour_sets)
    device = torch.device("cuda" if not torch.cuda.is_available() else "cpu")
    device = runnable(device)
    model = CNNCifar().to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    l2c_optimizer = optim.Adam([model.alpha], lr=beta, weight_decay=0.01)

    test_accuracies = [[] for _ in range(k)]

    theta = [model.state_dict().copy() for _ in range(k)]
    theta_half = [model.state_dict().copy() for _ in range(k)]

    delta_theta = [model.state_dict().copy() for _ in range(k)]

    with tqdm_output(tqdm(range(T))) as trange:
        for t in trange:
            for i in range(k):
                # Local SGD step
                log.info(f'Started training a Local SGD at node {i + 1}')

                model.load_state_dict(theta[i])
                for m in range(S):
                    for _, data in enumerate(train_loaders[i]):
                        inputs, labels = data
                        inputs, labels = inputs.to(device), labels.to(device)
                        optimizer.zero_grad()
                        outputs = model(inputs)
                        loss = criterion(outputs, labels)
                        loss.backward()
                        optimizer.step()

                log.info(f'Finished training a Local SGD at node {i + 1}')

                # Change capturing
                log.info(f'Computing change capturing at node {i + 1}')
                for name, param in model.named_parameters():
                    delta_theta[i][name] = theta[i][name] - theta_half[i][name]

                log.info(f'Computing mixing weights at node {i + 1}')
                # Mixing weights calculation
                model.w = model.w.clone()
                model.w[i] = compute_mixing_weights(model.alpha[i], neighbour_sets[i])

                # Aggregation
                log.info(f'Aggergating at node {i + 1}')
                theta_next = {}
                for name, param in model.named_parameters():
                    theta_next[name] = theta[i][name].clone()

                for j in neighbour_sets[i]:
                    for name, param in model.named_parameters():
                        theta_next[name] -= model.w[i][j].item() * delta_theta[i][name][j].clone()

                # Update L2C
                log.info(f'Updating L2C at node {i + 1}')
                model.load_state_dict(theta_next)
                model.train()
                # a training loop to find alpha that minimizes the validation loss
                for _, data in enumerate(val_loaders[i]):
                    inputs, labels = data
                    inputs, labels = inputs.to(device), labels.to(device)

                    l2c_optimizer.zero_grad()
                    model.alpha.requires_grad_(True)

                    log.info(f'Forward pass check')
                    outputs = model(inputs)
                    loss = criterion(outputs, labels)
                    model.alpha.retain_grad()
                    loss.backward()
                    print(f'gradient of alpha is {model.alpha.grad}')
                    l2c_optimizer.step()

                # Remove edges for sparse topology
                if t == T_0:
                    for _ in range(K_0):
                        j = min(neighbour_sets[i], key=lambda x: w[i][x])
                        neighbour_sets[i].delete(j)

                theta[i] = model.state_dict().copy()
                theta_half[i] = model.state_dict().copy()

                # Compute test accuracy for each local model
                test_accuracies = compute_test_acc(model, test_loaders[i], device, test_accuracies, i)

            log.info(f'Test accuracies atiteration at Comm_round {t} =  {sum(test_accuracies) / k}')

    return theta, test_accuracies


def main():
    """Run the question's loop once; it prints the (None) gradient of alpha at every validation batch."""
    train()
    return 0


if __name__ == "__main__":
    main()
