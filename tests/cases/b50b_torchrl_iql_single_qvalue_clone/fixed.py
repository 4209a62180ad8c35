# [BUG] No gradients on Q-value module using DiscreteIQLLoss
# https://github.com/pytorch/rl/issues/3127  (fixed by https://github.com/pytorch/rl/pull/4150)
# What went wrong: with num_qvalue_nets=1, DiscreteIQLLoss still called
#   convert_to_functional(qvalue_network, "qvalue_network", num_qvalue_nets, ...),
#   which expands the Q network's parameters, clones them and wraps the clone in a
#   fresh nn.Parameter owned by the loss. loss["loss_qvalue"].backward() then fills
#   the loss-owned copy; the Q module the user passed (and optimizes) gets .grad None.
# Fix (PR #4150): for a single Q network keep the passed parameters and add the
#   size-one ensemble axis only when the Q network is evaluated.
# Plain-torch reconstruction of torchrl's LossModule / DiscreteIQLLoss (tensordict removed).
import torch
from torch import nn
from torch.func import functional_call

torch.manual_seed(0)
n_act, n_obs, B = 4, 3, 2


class LossModule(nn.Module):
    SEP = "_sep_"

    def convert_to_functional(self, module, module_name, expand_dim=None,
                              create_target_params=False, compare_against=None):
        compare_against = set(compare_against or [])
        params = dict(module.named_parameters())
        if expand_dim:
            def _compare_and_expand(param):
                if param in compare_against:
                    return param.data.expand(expand_dim, *param.shape)
                p_out = param.expand(expand_dim, *param.shape).clone()
                p_out = nn.Parameter(p_out.uniform_(p_out.min().item(), p_out.max().item()).requires_grad_())
                return p_out
            params = {k: _compare_and_expand(p) for k, p in params.items()}
        setattr(self, module_name + "_params",
                nn.ParameterDict({k.replace(".", self.SEP): p for k, p in params.items()}))
        if create_target_params:
            setattr(self, "target_" + module_name + "_params",
                    {k.replace(".", self.SEP): p.data.clone() for k, p in params.items()})
        # stateless module kept out of the parameter registry, as torchrl does
        self.__dict__[module_name] = module

    def _params(self, name):
        return {k.replace(self.SEP, "."): v for k, v in getattr(self, name).items()}


class DiscreteIQLLoss(LossModule):
    def __init__(self, actor_network, qvalue_network, value_network, *,
                 num_qvalue_nets=1, expectile=0.5, gamma=0.99):
        super().__init__()
        self.convert_to_functional(actor_network, "actor_network")
        self.convert_to_functional(value_network, "value_network",
                                   compare_against=list(actor_network.parameters()))
        self.num_qvalue_nets = num_qvalue_nets
        self.convert_to_functional(qvalue_network, "qvalue_network", num_qvalue_nets if num_qvalue_nets > 1 else None, create_target_params=True, compare_against=list(actor_network.parameters()) + list(value_network.parameters()))
        self.expectile = expectile
        self.gamma = gamma

    def _qvalue(self, params, obs, act):
        # one Q evaluation per ensemble member (torchrl vmaps over the leading dim)
        return torch.stack([
            functional_call(self.qvalue_network, {k: v[i] for k, v in params.items()}, (obs, act))
            for i in range(self.num_qvalue_nets)
        ])

    def qvalue_loss(self, td):
        with torch.no_grad():
            next_v = functional_call(self.value_network, self._params("value_network_params"),
                                     (td["next_observation"],))
            target = td["reward"] + self.gamma * (1 - td["done"].float()) * next_v
        qparams = self._params("qvalue_network_params")
        if self.num_qvalue_nets == 1:
            # add the size-one ensemble axis only during Q evaluation
            qparams = {k: v.unsqueeze(0) for k, v in qparams.items()}
        q = self._qvalue(qparams, td["observation"], td["action"])
        return ((q - target.expand_as(q)) ** 2).mean()

    def forward(self, td):
        return {"loss_qvalue": self.qvalue_loss(td)}


class QValueClass(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(n_obs + n_act, 1)

    def forward(self, obs, act):
        return self.net(torch.cat([obs, act], -1))


actor_module = nn.Linear(n_obs, n_act)
qvalue_module = QValueClass()
value_module = nn.Linear(n_obs, 1)

loss_fn = DiscreteIQLLoss(actor_module, qvalue_module, value_module, num_qvalue_nets=1)

td = {
    "observation": torch.randn(B, n_obs),
    "action": nn.functional.one_hot(torch.randint(n_act, (B,)), n_act).float(),
    "next_observation": torch.randn(B, n_obs),
    "reward": torch.randn(B, 1),
    "done": torch.zeros(B, 1, dtype=torch.bool),
}

optim = torch.optim.Adam(qvalue_module.parameters(), lr=1e-2)  # only the Q-value loss is kept here
initial_weights = qvalue_module.net.weight.detach().clone()
loss = loss_fn(td)
optim.zero_grad()
loss["loss_qvalue"].backward()
print("qvalue_module.net.weight.grad:", qvalue_module.net.weight.grad)
optim.step()
print("Q weights changed:", not torch.equal(initial_weights, qvalue_module.net.weight))
