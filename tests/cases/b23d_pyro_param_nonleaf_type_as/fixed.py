"""Pyro (pyro-ppl/pyro#953, https://github.com/pyro-ppl/pyro/issues/953; fixed by PR #970): on PyTorch master,
examples/bayesian_regression.py fails with "RuntimeError: you can only change requires_grad flags of leaf
variables." when the guide registers its first parameter.
Why: the guide writes w_loc = torch.randn(1, p, requires_grad=True).type_as(data). The requires_grad leaf is
the randn tensor; .type_as(data) (data is float64) returns a new, non-leaf tensor with a grad_fn. pyro.param
hands it to the ParamStore, which (as in pyro 0.2) maps it to the unconstrained space under no_grad (the
identity for constraints.real, so the same tensor) and sets unconstrained_param.requires_grad = True, which
PyTorch refuses for a non-leaf.
Fix (PR #970): cast first, then mark the result as the leaf:
w_loc = torch.randn(1, p).type_as(data); w_loc.requires_grad = True."""
import torch
import torch.nn.functional as F
from torch.distributions import Normal, constraints, transform_to

# --- stand-in for pyro 0.2: pyro.param / ParamStoreDict.get_param, and SVI(..., Trace_ELBO) with Adam ---
_PARAM_STORE, _CONSTRAINTS = {}, {}


def param(name, init_tensor=None, constraint=constraints.real):
    if name not in _PARAM_STORE:
        with torch.no_grad():
            unconstrained_param = transform_to(constraint).inv(init_tensor)
        unconstrained_param.requires_grad = True
        _PARAM_STORE[name], _CONSTRAINTS[name] = unconstrained_param, constraint
    return transform_to(_CONSTRAINTS[name])(_PARAM_STORE[name])


class SVI:
    def __init__(self, model, guide, lr):
        self.model, self.guide, self.lr, self.optim = model, guide, lr, None

    def step(self, data):
        w, b, log_q = self.guide(data)
        loss = -(self.model(data, w, b) - log_q)  # single-particle ELBO
        if self.optim is None:
            self.optim = torch.optim.Adam(list(_PARAM_STORE.values()), lr=self.lr)
        self.optim.zero_grad()
        loss.backward()
        self.optim.step()
        return loss.item()
# --- end of stand-in ---


torch.manual_seed(0)
N, p = 100, 2
X = torch.rand(N, p, dtype=torch.float64)  # the example builds its data from NumPy: float64
y = X @ torch.tensor([[2.0], [3.0]], dtype=torch.float64) + 1 + 0.01 * torch.randn(N, 1, dtype=torch.float64)
data = torch.cat((X, y), 1)


def model(data, w, b):
    x_data, y_data = data[:, :-1], data[:, -1]
    prior = Normal(torch.zeros(1, p).type_as(data), 2 * torch.ones(1, p).type_as(data)).log_prob(w).sum()
    prediction_mean = (x_data @ w.t()).squeeze(-1) + b
    return prior + Normal(prediction_mean, 0.1).log_prob(y_data).sum()


def guide(data):
    w_loc = torch.randn(1, p).type_as(data)
    w_loc.requires_grad = True
    w_log_sig = (-3.0 * torch.ones(1, p) + 0.05 * torch.randn(1, p)).type_as(data)
    mw_param = param("guide_mean_weight", w_loc)
    sw_param = F.softplus(param("guide_log_scale_weight", w_log_sig))
    mb_param = param("guide_mean_bias", torch.zeros(1).type_as(data))
    q_w = Normal(mw_param, sw_param)
    w = q_w.rsample()
    return w, mb_param, q_w.log_prob(w).sum()


svi = SVI(model, guide, lr=0.05)
before = None
for j in range(20):
    loss = svi.step(data)
    if before is None:
        before = _PARAM_STORE["guide_mean_weight"].detach().clone()
print("loss", loss, "weights changed:", not torch.equal(before, _PARAM_STORE["guide_mean_weight"]))
