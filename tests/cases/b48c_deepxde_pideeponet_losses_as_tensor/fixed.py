# Report: lululxvi/deepxde PR #1388 "Fixed a bug in `pde_operator.py` that bkd.as_tensor()
#   would make the gradient disappear" (fix merged as PR #1379 "Feature/pde operator backend")
#   https://github.com/lululxvi/deepxde/pull/1388
#   https://github.com/lululxvi/deepxde/pull/1379
# Physics-informed DeepONet (PDEOperatorCartesianProd) with the PyTorch backend: the PDE and
# BC losses are computed per input function, regrouped with zip(*losses), and each group is
# turned into one tensor with bkd.as_tensor(...). For a tuple of loss tensors the PyTorch
# backend calls torch.as_tensor, which copies the values into a NEW tensor with no history,
# so model.train() dies at total_loss.backward() with
#   RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn
# Fix (#1379): "Use stack instead of as_tensor to keep the gradients."
#   losses = [bkd.reduce_mean(bkd.stack(loss, 0)) for loss in losses]
# The deepxde pieces needed (backend functions, DeepONetCartesianProd, _losses, the pytorch
# train_step) are inlined in small form; a 1D Poisson problem -u'' = v with u(0)=u(1)=0 and
# random input functions stands in for the example data.
import types

import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)
np.random.seed(0)


# --- deepxde/backend/pytorch/tensor.py (the functions used) ---
def _as_tensor(data, dtype=None):
    if isinstance(data, torch.Tensor):
        if dtype is None or data.dtype == dtype:
            return data
        return data.type(dtype=dtype)
    return torch.as_tensor(data, dtype=dtype)


bkd = types.SimpleNamespace(
    as_tensor=_as_tensor,
    stack=lambda values, axis: torch.stack(values, dim=axis),
    reduce_mean=lambda input_tensor: torch.mean(input_tensor),
    zeros_like=torch.zeros_like,
)


# --- deepxde.nn.pytorch.DeepONetCartesianProd (small) ---
class DeepONetCartesianProd(nn.Module):
    def __init__(self, m, dim_x, p):
        super().__init__()
        self.branch = nn.Sequential(nn.Linear(m, 16), nn.Tanh(), nn.Linear(16, p))
        self.trunk = nn.Sequential(nn.Linear(dim_x, 16), nn.Tanh(), nn.Linear(16, p), nn.Tanh())
        self.b = nn.Parameter(torch.tensor(0.0))
        self.auxiliary_vars = None

    def forward(self, inputs):
        x_func, x_loc = inputs
        x_func = self.branch(x_func)
        x_loc = self.trunk(x_loc)
        x = torch.einsum("bi,ni->bn", x_func, x_loc)
        return x + self.b


def pde(x, y, v):
    dy_x = torch.autograd.grad(y, x, torch.ones_like(y), create_graph=True)[0]
    dy_xx = torch.autograd.grad(dy_x, x, torch.ones_like(dy_x), create_graph=True)[0]
    return -dy_xx - v


# --- deepxde/data/pde_operator.py, PDEOperatorCartesianProd._losses (before #1379) ---
class PDEOperatorCartesianProd:
    def __init__(self, num_bcs, num_func, train_x, train_aux_vars):
        self.num_bcs = num_bcs
        self.num_func = num_func
        self.train_x = train_x
        self.train_aux_vars = train_aux_vars

    def _losses(self, outputs, loss_fn, inputs, model, num_func):
        bcs_start = np.cumsum([0] + self.num_bcs)

        losses = []
        for i in range(num_func):
            out = outputs[i][:, None]

            f = pde(inputs[1], out, model.net.auxiliary_vars[i][:, None])
            if not isinstance(f, (list, tuple)):
                f = [f]
            error_f = [fi[bcs_start[-1]:] for fi in f]
            losses_i = [loss_fn(bkd.zeros_like(error), error) for error in error_f]

            # Dirichlet BC u = 0 at the first bcs_start[-1] points
            error = out[bcs_start[0]:bcs_start[-1]]
            losses_i.append(loss_fn(bkd.zeros_like(error), error))

            losses.append(losses_i)

        losses = zip(*losses)
        losses = [bkd.reduce_mean(bkd.stack(l, 0)) for l in losses]
        return losses

    def losses_train(self, targets, outputs, loss_fn, inputs, model):
        return self._losses(outputs, loss_fn, inputs, model, self.num_func)


# --- deepxde/model.py, pytorch backend (small) ---
class Model:
    def __init__(self, data, net):
        self.data = data
        self.net = net
        self.opt = torch.optim.Adam(self.net.parameters(), lr=1e-3)

    def outputs_losses(self, inputs, targets, auxiliary_vars):
        self.net.auxiliary_vars = torch.as_tensor(auxiliary_vars)
        inputs = tuple(map(lambda x: torch.as_tensor(x).requires_grad_(), inputs))
        outputs_ = self.net(inputs)
        losses = self.data.losses_train(targets, outputs_, nn.MSELoss(), inputs, self)
        losses = torch.stack(losses)
        return outputs_, losses

    def train_step(self, inputs, targets, auxiliary_vars):
        losses = self.outputs_losses(inputs, targets, auxiliary_vars)[1]
        total_loss = torch.sum(losses)
        self.opt.zero_grad()
        total_loss.backward()
        self.opt.step()
        return total_loss

    def train(self, iterations):
        for _ in range(iterations):
            self.train_step(self.data.train_x, None, self.data.train_aux_vars)


num_func, m = 4, 10
eval_pts = np.linspace(0, 1, m, dtype=np.float32)[:, None]
x_bc = np.array([[0.0], [1.0]], dtype=np.float32)
x_dom = np.random.rand(10, 1).astype(np.float32)
pde_x = np.vstack([x_bc, x_dom])                          # BC points first, then PDE points
coef = np.random.randn(num_func, 3).astype(np.float32)
func_vals = (coef[:, :1] + coef[:, 1:2] * eval_pts.T + coef[:, 2:] * eval_pts.T ** 2)
vx = (coef[:, :1] + coef[:, 1:2] * pde_x.T + coef[:, 2:] * pde_x.T ** 2)

data = PDEOperatorCartesianProd([2], num_func, (func_vals, pde_x), vx.astype(np.float32))
net = DeepONetCartesianProd(m, 1, 16)
model = Model(data, net)
model.train(iterations=2)
print("branch[0].weight.grad is None:", net.branch[0].weight.grad is None)
