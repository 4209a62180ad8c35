"""brianlan/pytorch-grad-norm, PR #1 "Update train.py" (https://github.com/brianlan/pytorch-grad-norm/pull/1,
"This does solve the error"): the GradNorm toy example wraps the GradNorm loss in torch.tensor(...) before
asking torch.autograd.grad for the task weights' gradient. torch.tensor copies the value into a new leaf
without history, so autograd.grad raises "element 0 of tensors does not require grad and does not have a
grad_fn" and the loss weights model.weights never learn.
Fix (as in the later copies of this code): grad_norm_loss = torch.sum(torch.abs(norms - constant_term))."""
import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(123)
np.random.seed(123)


class RegressionModel(nn.Module):
    def __init__(self, n_tasks):
        super().__init__()
        self.n_tasks = n_tasks
        self.l1 = nn.Linear(250, 100)
        self.l2 = nn.Linear(100, 100)
        for i in range(n_tasks):
            setattr(self, 'task_{}'.format(i), nn.Linear(100, 100))

    def forward(self, x):
        h = torch.relu(self.l2(torch.relu(self.l1(x))))
        return [getattr(self, 'task_{}'.format(i))(h) for i in range(self.n_tasks)]


class RegressionTrain(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.weights = nn.Parameter(torch.ones(model.n_tasks).float())
        self.mse_loss = nn.MSELoss()

    def forward(self, x, ts):
        ys = self.model(x)
        return torch.stack([self.mse_loss(ys[i], ts[:, i, :]) for i in range(self.model.n_tasks)])

    def get_last_shared_layer(self):
        return self.model.l2


sigmas = [1.0, 100.0]
n_tasks = len(sigmas)
X = torch.randn(64, 250)
B = torch.randn(250, 100) / 16
ts = torch.stack([s * torch.tanh(X @ B) for s in sigmas], dim=1)

model = RegressionTrain(RegressionModel(n_tasks))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
alpha = 0.12

for t in range(3):
    task_loss = model(X, ts)
    weighted_task_loss = torch.mul(model.weights, task_loss)
    if t == 0:
        initial_task_loss = task_loss.data.numpy()
    loss = torch.sum(weighted_task_loss)
    optimizer.zero_grad()
    loss.backward(retain_graph=True)
    model.weights.grad.data = model.weights.grad.data * 0.0

    W = model.get_last_shared_layer()
    norms = []
    for i in range(len(task_loss)):
        gygw = torch.autograd.grad(task_loss[i], W.parameters(), retain_graph=True)
        norms.append(torch.norm(torch.mul(model.weights[i], gygw[0])))
    norms = torch.stack(norms)
    loss_ratio = task_loss.data.numpy() / initial_task_loss
    inverse_train_rate = loss_ratio / np.mean(loss_ratio)
    mean_norm = np.mean(norms.data.numpy())
    constant_term = torch.tensor(mean_norm * (inverse_train_rate ** alpha), requires_grad=False)
    grad_norm_loss = torch.sum(torch.abs(norms - constant_term))
    model.weights.grad = torch.autograd.grad(grad_norm_loss, model.weights)[0]
    optimizer.step()

    normalize_coeff = n_tasks / torch.sum(model.weights.data, dim=0)
    model.weights.data = model.weights.data * normalize_coeff
    print('{}: weights={}, task_loss={}, grad_norm_loss={:.4f}'.format(
        t, model.weights.data.numpy(), task_loss.data.numpy(), grad_norm_loss.item()))
