"""Elastic Weight Consolidation (Kirkpatrick et al. 2017) on permuted-MNIST-style tasks, reduced from
kuc2477/pytorch-ewc (https://github.com/kuc2477/pytorch-ewc: model.py `MLP.estimate_fisher`,
`MLP.consolidate`, `MLP.ewc_loss`; train.py `train`).

Train on task 1; then estimate the diagonal Fisher from per-sample log-likelihood gradients
(`autograd.grad(l, self.parameters(), retain_graph=...)` for each sample, squared and averaged, then
`.detach()`ed) and `consolidate` by `register_buffer('{n}_mean', p.data.clone())` and
`register_buffer('{n}_fisher', ...)` for every parameter; on task 2 the loss is
`ce_loss + (lamda / 2) * sum(fisher * (p - mean) ** 2)`, with the buffers read back through `getattr`.

Suspicious-but-correct patterns kept: the old parameters are snapshotted with `p.data.clone()` into
buffers, so the anchor carries no gradient (only `p` does); the Fisher is built from `torch.autograd.grad`
calls that never touch `.grad` and is detached; `ewc_loss` swallows `AttributeError` and returns a constant
`torch.zeros(1)` (no graph) before the first consolidation; buffers are registered in the middle of
training, after the optimizer was built; losses are logged with `.item()`.
(Fisher averaged per element, `(g ** 2).mean(0)`, i.e. the EWC diagonal.)
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import autograd


class MLP(nn.Module):
    def __init__(self, input_size, output_size, hidden_size=32, hidden_layer_num=1,
                 hidden_dropout_prob=.5, input_dropout_prob=.2, lamda=40):
        super().__init__()
        self.input_size = input_size
        self.output_size = output_size
        self.lamda = lamda
        self.layers = nn.ModuleList([
            # input
            nn.Linear(input_size, hidden_size), nn.ReLU(),
            nn.Dropout(input_dropout_prob),
            # hidden
            *((nn.Linear(hidden_size, hidden_size), nn.ReLU(),
               nn.Dropout(hidden_dropout_prob)) * hidden_layer_num),
            # output
            nn.Linear(hidden_size, output_size)
        ])

    def forward(self, x):
        for l in self.layers:  # upstream: reduce(lambda x, l: l(x), self.layers, x)
            x = l(x)
        return x

    def estimate_fisher(self, data, labels, sample_size, batch_size=8):
        # sample loglikelihoods from the dataset.
        loglikelihoods = []
        for start in range(0, len(data), batch_size):
            x = data[start:start + batch_size].view(batch_size, -1)
            y = labels[start:start + batch_size]
            loglikelihoods.append(F.log_softmax(self(x), dim=1)[range(batch_size), y.data])
            if len(loglikelihoods) >= sample_size // batch_size:
                break
        # estimate the fisher information of the parameters.
        loglikelihoods = torch.cat(loglikelihoods).unbind()
        loglikelihood_grads = zip(*[autograd.grad(
            l, self.parameters(),
            retain_graph=(i < len(loglikelihoods))
        ) for i, l in enumerate(loglikelihoods, 1)])
        loglikelihood_grads = [torch.stack(gs) for gs in loglikelihood_grads]
        fisher_diagonals = [(g ** 2).mean(0) for g in loglikelihood_grads]
        param_names = [n.replace('.', '__') for n, p in self.named_parameters()]
        return {n: f.detach() for n, f in zip(param_names, fisher_diagonals)}

    def consolidate(self, fisher):
        for n, p in self.named_parameters():
            n = n.replace('.', '__')
            self.register_buffer('{}_mean'.format(n), p.data.clone())
            self.register_buffer('{}_fisher'.format(n), fisher[n].data.clone())

    def ewc_loss(self):
        try:
            losses = []
            for n, p in self.named_parameters():
                # retrieve the consolidated mean and fisher information.
                n = n.replace('.', '__')
                mean = getattr(self, '{}_mean'.format(n))
                fisher = getattr(self, '{}_fisher'.format(n))
                losses.append((fisher * (p - mean) ** 2).sum())
            return (self.lamda / 2) * sum(losses)
        except AttributeError:
            # ewc loss is 0 if there's no consolidated parameters.
            return torch.zeros(1)


def make_task(perm, prototypes, n=32):
    labels = torch.arange(prototypes.size(0)).repeat(n // prototypes.size(0))
    images = prototypes[labels] + 0.3 * torch.randn(n, 1, 5, 5)
    return images.view(n, -1)[:, perm].view(n, 1, 5, 5), labels


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    prototypes = torch.randn(4, 1, 5, 5)
    # permuted-MNIST: task 1 is the identity permutation, task 2 a random pixel permutation
    train_datasets = [make_task(torch.arange(25), prototypes), make_task(torch.randperm(25), prototypes)]
    model = MLP(25, 4)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, weight_decay=1e-5)
    model.train()

    step, history = 0, []
    epochs_per_task, batch_size = 3, 16
    for task, (data, labels) in enumerate(train_datasets, 1):
        for epoch in range(epochs_per_task):
            start = (epoch * batch_size) % len(data)
            x = data[start:start + batch_size].view(batch_size, -1)
            y = labels[start:start + batch_size]
            # run the model and backpropagate the errors.
            optimizer.zero_grad()
            scores = model(x)
            ce_loss = criterion(scores, y)
            ewc_loss = model.ewc_loss()
            loss = ce_loss + ewc_loss
            loss.backward()
            optimizer.step()
            _, predicted = scores.max(1)
            precision = (predicted == y).sum().float() / len(x)
            history.append({"task": task, "prec": precision.item(), "ce": ce_loss.item(),
                            "ewc": ewc_loss.item(), "total": loss.item()})
            print(f"step {step} loss {loss.item():.6f}")
            step += 1
        if task < len(train_datasets):
            # estimate the fisher information of the parameters and consolidate them in the network.
            model.consolidate(model.estimate_fisher(data, labels, sample_size=16))
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()},
                   os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
