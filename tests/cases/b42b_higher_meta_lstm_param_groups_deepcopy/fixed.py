# Trainable (parametrised) inner optimiser, higher-style, written in plain torch.
# The differentiable optimiser deep-copies the wrapped optimizer's param_groups,
# which also copies the trainable optimiser model stored in them.
import copy
from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.optimizer import Optimizer

torch.manual_seed(0)


class EmptySimpleMetaLstm(Optimizer):
    # only a container: the trainable optimiser model lives in the param group
    def __init__(self, params, trainable_opt_model, trainable_opt_state, *args, **kwargs):
        defaults = {'trainable_opt_model': trainable_opt_model,
                    'trainable_opt_state': trainable_opt_state,
                    'args': args, 'kwargs': kwargs}
        super().__init__(params, defaults)


class DifferentiableOptimizer:
    def __init__(self, other):
        self.param_groups = other.param_groups
        self.sizes = [len(g['params']) for g in self.param_groups]

    def step(self, loss, params):
        grads = torch.autograd.grad(loss, params, create_graph=True)
        grouped, start = [], 0
        for group, n in zip(self.param_groups, self.sizes):
            group['params'] = list(params[start:start + n])
            grouped.append(list(grads[start:start + n]))
            start += n
        self._update(grouped)
        return [p for group in self.param_groups for p in group['params']]


class SimpleMetaLstm(DifferentiableOptimizer):
    def _update(self, grouped_grads):
        for group, grads in zip(self.param_groups, grouped_grads):
            eta = group['trainable_opt_model']
            state = group['trainable_opt_state']
            for p_idx, (p, g) in enumerate(zip(group['params'], grads)):
                prev_lr = state['prev_lr']
                inp = torch.stack([p.reshape(-1)[0], g.reshape(-1)[0], prev_lr.reshape(-1)[0]])
                lr = eta(inp)
                group['params'][p_idx] = p - lr * g
                state['prev_lr'] = lr


def fmodel(params, x):
    return F.relu(F.linear(x, params[0]))


base_mdl = nn.Sequential(OrderedDict([('fc', nn.Linear(1, 1, bias=False)), ('act', nn.ReLU())]))
opt_mdl = nn.Sequential(OrderedDict([('fc', nn.Linear(3, 1, bias=False)), ('act', nn.LeakyReLU())]))
meta_opt = torch.optim.SGD(opt_mdl.parameters(), lr=0.1)

x = torch.randn(16, 1)
y = 2.0 * x
w_before = opt_mdl.fc.weight.detach().clone()
for episode in range(2):
    meta_opt.zero_grad()
    inner_opt = EmptySimpleMetaLstm(base_mdl.parameters(), trainable_opt_model=opt_mdl,
                                    trainable_opt_state={'prev_lr': 0.9 * torch.randn(1)})
    diffopt = SimpleMetaLstm(inner_opt)
    params = list(base_mdl.parameters())
    for _ in range(3):
        inner_loss = F.mse_loss(fmodel(params, x), y)
        params = diffopt.step(inner_loss, params)
    meta_loss = F.mse_loss(fmodel(params, x), y)
    meta_loss.backward()
    print('episode', episode, 'opt_mdl.fc.weight.grad =', opt_mdl.fc.weight.grad)
    meta_opt.step()
print('optimiser model changed:', not torch.equal(w_before, opt_mdl.fc.weight.detach()))
