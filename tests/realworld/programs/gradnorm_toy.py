"""GradNorm (Chen et al. 2018) learned loss balancing on the paper's toy multi-task regression, reduced from
brianlan/pytorch-grad-norm (https://github.com/brianlan/pytorch-grad-norm: train.py `train_toy_example`,
model.py `RegressionTrain` / `RegressionModel`, dataset.py `RegressionDataset`).

`RegressionTrain` wraps a shared trunk + per-task heads and owns `self.weights = nn.Parameter(ones(T))`,
trained by the SAME Adam as the network. Each step: `loss = sum(weights * task_loss)`,
`loss.backward(retain_graph=True)`; then the weights' gradient from that loss is thrown away
(`model.weights.grad.data = model.weights.grad.data * 0.0`); per-task gradient norms of the last shared
layer are taken with `torch.autograd.grad(task_loss[i], W.parameters(), retain_graph=True)` and scaled by
`model.weights[i]`; the target `mean_norm * r_i ** alpha` is a constant built from detached values and the
initial losses L(0) (`task_loss.data` at t == 0); the GradNorm loss's gradient w.r.t. the weights is
ASSIGNED with `model.weights.grad = torch.autograd.grad(grad_norm_loss, model.weights)[0]` and
`optimizer.step()` updates both; afterwards the weights are renormalised through `.data` to sum to T.

Suspicious-but-correct patterns kept: a learned Parameter whose backward() gradient is zeroed on purpose and
replaced by a hand-assigned `autograd.grad` result; `.data` reads for L(0), loss ratios and the mean norm;
in-place-by-assignment `model.weights.data = model.weights.data * coeff` renormalisation outside autograd.
(The upstream line `grad_norm_loss = torch.tensor(torch.sum(...))` detaches the loss and fails on current
PyTorch; like later versions and forks of this file, the sum is used directly. numpy ops become torch ops.)
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class RegressionTrain(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model
        # assign the weights for each task
        self.weights = nn.Parameter(torch.ones(model.n_tasks).float())
        self.mse_loss = nn.MSELoss()

    def forward(self, x, ts):
        B, n_tasks = ts.shape[:2]
        ys = self.model(x)
        assert ys.size()[1] == n_tasks
        task_loss = []
        for i in range(n_tasks):
            task_loss.append(self.mse_loss(ys[:, i, :], ts[:, i, :]))
        return torch.stack(task_loss)

    def get_last_shared_layer(self):
        return self.model.get_last_shared_layer()


class RegressionModel(nn.Module):
    def __init__(self, n_tasks, dim_in=25, dim_h=16, dim_out=10):
        super().__init__()
        self.n_tasks = n_tasks
        self.l1 = nn.Linear(dim_in, dim_h)
        self.l2 = nn.Linear(dim_h, dim_h)
        self.l3 = nn.Linear(dim_h, dim_h)
        self.l4 = nn.Linear(dim_h, dim_h)
        for i in range(self.n_tasks):
            setattr(self, 'task_{}'.format(i), nn.Linear(dim_h, dim_out))

    def forward(self, x):
        h = F.relu(self.l1(x))
        h = F.relu(self.l2(h))
        h = F.relu(self.l3(h))
        h = F.relu(self.l4(h))
        outs = []
        for i in range(self.n_tasks):
            layer = getattr(self, 'task_{}'.format(i))
            outs.append(layer(h))
        return torch.stack(outs, dim=1)

    def get_last_shared_layer(self):
        return self.l4


def regression_dataset(sigmas, epsilons, n=64, dim_in=25, dim_out=10):
    # dataset.py: y_i = sigma_i * tanh((B + eps_i) x), B ~ N(0, 10)
    B = torch.randn(dim_out, dim_in) * 10 ** 0.5
    x = torch.randn(n, dim_in)
    ys = torch.stack([s * torch.tanh(x @ (B + e).t() / dim_in ** 0.5) for s, e in zip(sigmas, epsilons)], dim=1)
    return x, ys


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    sigmas, alpha = [1.0, 10.0], 0.12
    n_tasks = len(sigmas)
    epsilons = torch.randn(n_tasks, 10, 25) * 3.5
    X, ts = regression_dataset(sigmas, epsilons)

    model = RegressionTrain(RegressionModel(n_tasks))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

    for t in range(6):
        # evaluate each task loss L_i(t)
        task_loss = model(X, ts)
        weighted_task_loss = torch.mul(model.weights, task_loss)
        if t == 0:
            # set L(0)
            initial_task_loss = task_loss.data
        loss = torch.sum(weighted_task_loss)
        optimizer.zero_grad()
        loss.backward(retain_graph=True)

        # set the gradients of w_i(t) to zero because these gradients have to be updated using the GradNorm loss
        model.weights.grad.data = model.weights.grad.data * 0.0

        # get layer of shared weights
        W = model.get_last_shared_layer()
        # get the gradient norms for each of the tasks G^{(i)}_w(t)
        norms = []
        for i in range(len(task_loss)):
            gygw = torch.autograd.grad(task_loss[i], W.parameters(), retain_graph=True)
            norms.append(torch.norm(torch.mul(model.weights[i], gygw[0])))
        norms = torch.stack(norms)

        # compute the inverse training rate r_i(t)
        loss_ratio = task_loss.data / initial_task_loss
        inverse_train_rate = loss_ratio / loss_ratio.mean()
        # compute the mean norm \tilde{G}_w(t)
        mean_norm = norms.data.mean()
        # this term has to remain constant
        constant_term = (mean_norm * (inverse_train_rate ** alpha)).requires_grad_(False)
        # this is the GradNorm loss itself
        grad_norm_loss = torch.sum(torch.abs(norms - constant_term))
        # compute the gradient for the weights
        model.weights.grad = torch.autograd.grad(grad_norm_loss, model.weights)[0]

        optimizer.step()

        # renormalize
        normalize_coeff = n_tasks / torch.sum(model.weights.data, dim=0)
        model.weights.data = model.weights.data * normalize_coeff
        print(f"step {t} loss {loss.item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()},
                   os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
