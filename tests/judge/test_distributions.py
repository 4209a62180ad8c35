"""torch.distributions in a training loop: ``sample()`` runs a flow's user modules under no_grad (named at the user's
call, not inside the modules), and ``log_prob`` of a distribution's own ``rsample()`` cancels the location's gradient
(named at the ``rsample`` when the gradient came out exactly zero; a pathwise loss stays silent)."""
from __future__ import annotations

import textwrap

PRELUDE = """
import torch
from torch import nn
from torch.distributions import Normal, Independent, TransformedDistribution, constraints
from torch.distributions.transforms import Transform
torch.manual_seed(0)
"""

FLOW = """
class Affine(Transform):
    domain = constraints.real_vector
    codomain = constraints.real_vector
    bijective = True
    def __init__(self, net):
        super().__init__(cache_size=1)
        self.net = net
    def _call(self, x):
        return x * torch.exp(self.net(x)) + 1.0  # <- inside
    def _inverse(self, y):
        return y - 1.0
    def log_abs_det_jacobian(self, x, y):
        return self.net(x).sum(-1)
net = nn.Linear(2, 2)
flow = TransformedDistribution(Independent(Normal(torch.zeros(2), torch.ones(2)), 1), [Affine(net)])
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
"""


def run(snippet, head: str, loop: str):
    script = snippet(PRELUDE + head + textwrap.dedent(loop))
    result = script.run()
    return script, [(f.kind, f.severity, f.line) for f in result.findings if f.severity in ("error", "warning")], result


def test_a_sample_drawn_under_the_library_s_no_grad_is_named_at_the_user_s_call(snippet):
    """pyro#1885: the flow's network runs inside ``TransformedDistribution.sample``'s ``with torch.no_grad():``; the
    line to change is the user's ``sample`` call (``rsample`` keeps gradients), not the network's own line."""
    script, loud, result = run(snippet, FLOW, """
    for step in range(2):
        z = flow.sample((16,))  # <- call
        loss = (z ** 2).sum(-1).mean()
        opt.zero_grad()
        try:
            loss.backward()
        except RuntimeError:
            pass
        opt.step()
    """)
    assert set(loud) == {("no_grad", "error", script.line("call"))}
    finding = next(f for f in result.findings if f.kind == "no_grad")
    assert "TransformedDistribution.sample" in finding.message and "rsample()" in finding.fix
    assert ("used", script.line("inside")) in [(r.role, r.line) for r in finding.related]
    fixed = run(snippet, FLOW, """
    for step in range(2):
        z = flow.rsample((16,))
        loss = (z ** 2).sum(-1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    """)[1]
    assert fixed == []


POLICY = """
mean_head, log_std = nn.Linear(3, 1), nn.Parameter(torch.zeros(1))
opt = torch.optim.Adam(list(mean_head.parameters()) + [log_std], lr=1e-2)
"""


def test_log_prob_of_the_distribution_s_own_rsample_is_named_when_the_mean_learns_nothing(snippet):
    """pytorch#10943: REINFORCE with ``a = d.rsample()`` and ``d.log_prob(a)``: the mean's two paths cancel exactly."""
    loop = """
    for step in range(3):
        obs = torch.randn(16, 3)
        d = Normal(mean_head(obs), log_std.exp())
        a = d.{draw}()  # <- draw
        reward = -(a.detach() - obs.sum(-1, keepdim=True)) ** 2
        loss = -(d.log_prob(a) * (reward - reward.mean())).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    """
    script, loud, _ = run(snippet, POLICY, loop.format(draw="rsample"))
    assert set(loud) == {("non_differentiable", "error", script.line("draw"))}
    assert run(snippet, POLICY, loop.format(draw="sample"))[1] == []


def test_a_pathwise_loss_through_log_prob_of_its_own_rsample_is_silent(snippet):
    """SAC's actor: ``a = d.rsample()``, ``log_prob(a)`` for the entropy term and a critic of ``a``: the critic's term
    gives the mean its gradient, so nothing came out exactly zero."""
    _, loud, _ = run(snippet, POLICY, """
    critic = nn.Linear(1, 1)
    opt.add_param_group({"params": list(critic.parameters())})
    for step in range(3):
        obs = torch.randn(16, 3)
        d = Normal(mean_head(obs), log_std.exp())
        a = d.rsample()
        loss = (0.2 * d.log_prob(a) - critic(a)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    """)
    assert loud == []
