# RNN computation graph does not include cloned RNN parameters
# https://github.com/learnables/learn2learn/issues/139  (fixed by PR #140)
#
# learn2learn's clone_module() deep-copies the module and then swaps every entry of
# clone._parameters for `param.clone()` so the clone stays in the original's graph.
# An RNN does not read self._parameters in forward(): it reads self._flat_weights, a
# list of references built when the module is constructed (and rebuilt by _apply).
# After the swap, that list still points at the deep-copied leaf tensors, so the clone's
# new parameters are never used. MAML.adapt() then calls
# autograd.grad(loss, learner.parameters()), which raises "One of the differentiated
# Tensors appears to not have been used in the graph" (the reporter had to pass
# allow_unused=True, and the LSTM never got a meta-gradient).
# Fix (PR #140): rebuild the flattened weights after swapping the tensors:
# `clone = clone._apply(lambda x: x)` at the end of clone_module (and in update_module).
#
# torch >= 2.0 nn.LSTM re-checks its weights in every forward, so LSTM below is a small
# plain-torch copy of the torch 1.4 RNNBase caching that the report hit.
import copy

import torch
import torch.nn as nn
from torch.autograd import grad

torch.manual_seed(0)

NUM_VARIABLES = 3
HIDDEN_DIM = 8
ADAPTATION_STEPS = 1
TASKS = 2


class LSTM(nn.Module):
    """torch 1.4 nn.LSTM layout: forward reads the cached self._flat_weights list."""

    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.weight_ih_l0 = nn.Parameter(torch.randn(4 * hidden_size, input_size) * 0.1)
        self.weight_hh_l0 = nn.Parameter(torch.randn(4 * hidden_size, hidden_size) * 0.1)
        self.bias_ih_l0 = nn.Parameter(torch.zeros(4 * hidden_size))
        self.bias_hh_l0 = nn.Parameter(torch.zeros(4 * hidden_size))
        self._flat_weights_names = ['weight_ih_l0', 'weight_hh_l0', 'bias_ih_l0', 'bias_hh_l0']
        self._init_flat_weights()

    def _init_flat_weights(self):
        self._flat_weights = [getattr(self, wn) for wn in self._flat_weights_names]

    def _apply(self, fn):
        ret = super()._apply(fn)
        self._init_flat_weights()
        return ret

    def forward(self, x, hx=None):
        w_ih, w_hh, b_ih, b_hh = self._flat_weights
        seq_len, batch, _ = x.shape
        if hx is None:
            h = x.new_zeros(batch, self.hidden_size)
            c = x.new_zeros(batch, self.hidden_size)
        else:
            h, c = hx
        outs = []
        for t in range(seq_len):
            gates = x[t] @ w_ih.t() + b_ih + h @ w_hh.t() + b_hh
            i, f, g, o = gates.chunk(4, 1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            outs.append(h)
        return torch.stack(outs), (h, c)


class BedPredictor(nn.Module):
    def __init__(self):
        super().__init__()
        self.RNN = LSTM(NUM_VARIABLES, HIDDEN_DIM)
        self.hidden2Pred = nn.Linear(HIDDEN_DIM, NUM_VARIABLES)

    def forward(self, x, hidden=None):
        x = x.view(x.shape[0], -1, NUM_VARIABLES)
        if hidden is None:
            out, hidden = self.RNN(x)
        else:
            out, hidden = self.RNN(x, hidden)
        out = out.squeeze(1)
        pred = self.hidden2Pred(out)
        return pred, hidden


# ---- learn2learn 0.1.0: learn2learn/utils.py ----
def clone_module(module):
    clone = copy.deepcopy(module)

    # First, re-write all parameters
    for param_key in module._parameters:
        if module._parameters[param_key] is not None:
            cloned = module._parameters[param_key].clone()
            clone._parameters[param_key] = cloned

    # Second, handle the buffers if necessary
    for buffer_key in module._buffers:
        if clone._buffers[buffer_key] is not None and \
                clone._buffers[buffer_key].requires_grad:
            clone._buffers[buffer_key] = module._buffers[buffer_key].clone()

    # Then, recurse for each submodule
    for module_key in clone._modules:
        clone._modules[module_key] = clone_module(module._modules[module_key])
    return clone  # <- unused_parameter


def update_module(module, updates=None):
    if updates is not None:
        params = list(module.parameters())
        for p, g in zip(params, updates):
            p.update = g

    # Update the params
    for param_key in module._parameters:
        p = module._parameters[param_key]
        if p is not None and hasattr(p, 'update') and p.update is not None:
            module._parameters[param_key] = p + p.update

    # Then, recurse for each submodule
    for module_key in module._modules:
        module._modules[module_key] = update_module(module._modules[module_key], updates=None)
    return module


# ---- learn2learn 0.1.0: learn2learn/algorithms/maml.py ----
def maml_update(model, lr, grads=None):
    if grads is not None:
        params = list(model.parameters())
        for p, g in zip(params, grads):
            p.update = - lr * g
    return update_module(model)


class MAML(nn.Module):
    def __init__(self, model, lr, first_order=False, allow_unused=False):
        super().__init__()
        self.module = model
        self.lr = lr
        self.first_order = first_order
        self.allow_unused = allow_unused

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def adapt(self, loss, first_order=None, allow_unused=None):
        if first_order is None:
            first_order = self.first_order
        if allow_unused is None:
            allow_unused = self.allow_unused
        second_order = not first_order
        gradients = grad(loss,
                         self.module.parameters(),
                         retain_graph=second_order,
                         create_graph=second_order,
                         allow_unused=allow_unused)
        self.module = maml_update(self.module, self.lr, gradients)

    def clone(self, first_order=None, allow_unused=None):
        if first_order is None:
            first_order = self.first_order
        if allow_unused is None:
            allow_unused = self.allow_unused
        return MAML(clone_module(self.module), lr=self.lr,
                    first_order=first_order, allow_unused=allow_unused)


def get_task(task):
    t = torch.linspace(0, 3, 12).unsqueeze(1)
    return torch.sin(t * (task + 1) + torch.arange(NUM_VARIABLES).float())


model = BedPredictor()
maml = MAML(model, lr=0.01)
opt = torch.optim.Adam(maml.parameters(), lr=1e-3)
criterion = nn.MSELoss()

for iteration in range(2):
    opt.zero_grad()
    for task in range(TASKS):
        learner = maml.clone()
        learner.train()

        for _ in range(ADAPTATION_STEPS):
            seq = get_task(task)
            prediction, hidden = learner(seq)
            loss = criterion(prediction[:-1], seq[1:])
            learner.adapt(loss)

        seq = get_task(task)
        prediction, hidden = learner(seq)
        evaluation_error = criterion(prediction[:-1], seq[1:])
        evaluation_error.backward()
    opt.step()
    print('iteration', iteration, 'meta-loss', evaluation_error.item(),
          'RNN.weight_ih_l0.grad norm', model.RNN.weight_ih_l0.grad.norm().item())
