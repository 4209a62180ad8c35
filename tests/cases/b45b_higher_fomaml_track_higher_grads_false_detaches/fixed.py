"""facebookresearch/higher issue #102, "Why DifferentiableOptimizer detaches parameters when
track_higher_grads = False?", https://github.com/facebookresearch/higher/issues/102

The reporter implements first-order MAML (FOMAML) with higher: innerloop_ctx(self.model, self.in_optim,
copy_initial_weights=False, track_higher_grads=False), a few diffopt.step(loss) on the support set, then
query_loss.backward() and self.out_optim.step(). With track_higher_grads=False, DifferentiableOptimizer.step
hands the patched model `p.detach().requires_grad_()` as its new fast weights, which "cuts the gradient path
back to the original model parameters, even though copy_initial_weights=False": the query loss reaches only
the detached fast weights, the meta-parameters' .grad stays None and out_optim never moves them (the same
report, with an `assert ...grad is not None` that fails, is higher#129). The workaround given in the thread and
confirmed there: keep track_higher_grads=True and detach the gradients instead,
diffopt.step(loss, grad_callback=lambda grads: [g.detach() for g in grads]) (first-order MAML, .backward() works).
innerloop_ctx / DifferentiableSGD below are minimal stand-ins for higher's, keeping its step() logic.
"""
import contextlib
import types

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class _PatchedModule:  # stand-in for higher's monkey-patched stateless module
    def __init__(self, module, params):
        self._module, self._names = module, [n for n, _ in module.named_parameters()]
        self.fast_params = list(params)

    def update_params(self, params):
        self.fast_params = list(params)

    def __call__(self, x):
        return torch.func.functional_call(self._module, dict(zip(self._names, self.fast_params)), (x,))


class DifferentiableSGD:
    def __init__(self, other, fmodel, track_higher_grads=True):
        self.lr, self._fmodel, self._track_higher_grads = other.param_groups[0]['lr'], fmodel, track_higher_grads

    def step(self, loss, grad_callback=None):
        params = self._fmodel.fast_params
        all_grads = torch.autograd.grad(loss, params, create_graph=self._track_higher_grads, allow_unused=True)
        if grad_callback is not None:
            all_grads = grad_callback(all_grads)
        new_params = [p - self.lr * g for p, g in zip(params, all_grads)]
        if not self._track_higher_grads:
            new_params = [p.detach().requires_grad_() for p in new_params]
        self._fmodel.update_params(new_params)
        return new_params


@contextlib.contextmanager
def innerloop_ctx(model, opt, copy_initial_weights=True, track_higher_grads=True):
    params = model.parameters()
    if copy_initial_weights:
        params = [p.clone().detach().requires_grad_() for p in params]
    fmodel = _PatchedModule(model, params)
    yield fmodel, DifferentiableSGD(opt, fmodel, track_higher_grads=track_higher_grads)


higher = types.SimpleNamespace(innerloop_ctx=innerloop_ctx)


class FOMAML:
    def __init__(self, n_way=5, in_dim=16, inner_steps=3):
        self.model = nn.Sequential(nn.Linear(in_dim, 32), nn.ReLU(), nn.Linear(32, n_way))
        self.in_optim = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.out_optim = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.inner_steps = inner_steps

    def inner_loop(self, fmodel, diffopt, train_input, train_target):
        for _ in range(self.inner_steps):
            train_loss = F.cross_entropy(fmodel(train_input), train_target)
            diffopt.step(train_loss, grad_callback=lambda grads: [g.detach() for g in grads])

    def outer_loop(self, task_batch):
        self.out_optim.zero_grad()
        for task_data in task_batch:
            support_input, support_target, query_input, query_target = task_data
            with higher.innerloop_ctx(
                self.model, self.in_optim, copy_initial_weights=False, track_higher_grads=True
            ) as (fmodel, diffopt):
                self.inner_loop(fmodel, diffopt, support_input, support_target)
                query_output = fmodel(query_input)
                query_loss = F.cross_entropy(query_output, query_target)
                query_loss.backward()
        print("meta grad of model[0].weight is None:", self.model[0].weight.grad is None)
        self.out_optim.step()
        return query_loss.item()


def sample_task(n_way=5, k_shot=2, n_query=4, in_dim=16):
    protos = torch.randn(n_way, in_dim)
    y_s, y_q = torch.arange(n_way).repeat(k_shot), torch.arange(n_way).repeat(n_query)
    return protos[y_s] + 0.3 * torch.randn(len(y_s), in_dim), y_s, protos[y_q] + 0.3 * torch.randn(len(y_q), in_dim), y_q


learner = FOMAML()
w0 = learner.model[0].weight.detach().clone()
for it in range(3):
    loss = learner.outer_loop([sample_task() for _ in range(4)])
    print("outer step", it, "last query loss", round(loss, 4))
print("meta-parameters changed:", not torch.equal(w0, learner.model[0].weight))
