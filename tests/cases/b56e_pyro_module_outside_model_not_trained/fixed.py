# Report: "Learn pyro.module's parameters outside model/guide"
# https://github.com/pyro-ppl/pyro/issues/995
# What went wrong: the network was registered with `net = pyro.module("net", Net())` once,
# outside the model/guide pair.  SVI.step only optimizes the params that show up as param
# sites in the trace of model/guide, and pyro.module records those sites only when it runs
# inside model/guide.  The net gets gradients but no optimizer ever steps it, so its
# weights never change ("svi does not learn params outside of model/guide").
# Fix (maintainer's answer, confirmed by the reporter): lift the module inside the model,
# `lambda x: pyro.module("net", net)(x)`, so its params are in the trace SVI optimizes.
# Pyro's param store / trace / SVI / PyroOptim are rewritten below as small plain torch.
import types
import torch
import torch.nn as nn

torch.manual_seed(0)

# ---- minimal pyro: param store, trace, pyro.param / pyro.module / pyro.sample ----------
_PARAM_STORE = {}
_TRACE_STACK = []


def param(name, init_tensor):
    if name not in _PARAM_STORE:
        _PARAM_STORE[name] = init_tensor
    value = _PARAM_STORE[name]
    if _TRACE_STACK:
        _TRACE_STACK[-1]["params"][name] = value
    return value


def module(name, nn_module):
    for param_name, p in nn_module.named_parameters():
        param("{}$$${}".format(name, param_name), p)
    return nn_module


def sample(name, fn, obs=None):
    value = fn.rsample() if obs is None else obs
    if _TRACE_STACK:
        _TRACE_STACK[-1]["log_prob"] = _TRACE_STACK[-1]["log_prob"] + fn.log_prob(value).sum()
    return value


pyro = types.SimpleNamespace(param=param, module=module, sample=sample)


class Trace_ELBO:
    def loss_and_grads(self, model, guide, *args):
        _TRACE_STACK.append({"params": {}, "log_prob": torch.zeros(())})
        guide(*args)
        guide_lp = _TRACE_STACK[-1]["log_prob"]
        _TRACE_STACK[-1]["log_prob"] = torch.zeros(())
        model(*args)
        frame = _TRACE_STACK.pop()
        loss = guide_lp - frame["log_prob"]
        loss.backward()
        return loss.item(), frame["params"]


class Adam:  # pyro.optim.Adam: one torch optimizer per param it is handed
    def __init__(self, optim_args):
        self.optim_args = optim_args
        self.optim_objs = {}

    def __call__(self, params):
        for p in params:
            if p.grad is None:
                continue
            if p not in self.optim_objs:
                self.optim_objs[p] = torch.optim.Adam([p], **self.optim_args)
            self.optim_objs[p].step()


class SVI:
    def __init__(self, model, guide, optim, loss):
        self.model, self.guide, self.optim, self.loss = model, guide, optim, loss

    def step(self, *args):
        loss, trace_params = self.loss.loss_and_grads(self.model, self.guide, *args)
        params = set(trace_params.values())
        self.optim(params)
        for p in params:
            p.grad = None
        return loss


# ---- user code (from the issue) ---------------------------------------------------------
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 1)

    def forward(self, x):
        return self.fc(x).squeeze(-1)


net_module = Net()
net = lambda x: pyro.module("net", net_module)(x)


def model(x, y):
    o = net(x)
    pyro.sample("y", torch.distributions.Normal(o, 1.0), obs=y)


def guide(x, y):
    pass


x = torch.randn(64, 3)
y = x @ torch.tensor([1.5, -2.0, 0.5]) + 0.3

optimizer = Adam({"lr": 0.05})
svi = SVI(model, guide, optimizer, Trace_ELBO())
w_before = net_module.fc.weight.detach().clone()
for step in range(200):
    loss = svi.step(x, y)
    if step % 50 == 0:
        print("step {} loss {:.3f}".format(step, loss))
w_after = net_module.fc.weight.detach()
print("fc.weight change:", (w_after - w_before).abs().max().item())
