"""A tensor that got no gradient because the backward meant to give it one was refused (the critic's step ran before
the policy's backward, as in a soft actor-critic that builds the policy loss first) is explained by that refusal: the
target computed from the same policy under ``no_grad`` is no cause, and the report says the refusal is why."""
from __future__ import annotations

import pytest

from gradcheck_l2c import trace

SAC = """
import torch
from torch import nn
torch.manual_seed(0)

policy = nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 1))
critic = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
policy_optim = torch.optim.Adam(policy.parameters(), lr=1e-3)
critic_optim = torch.optim.Adam(critic.parameters(), lr=1e-3)

for step in range(3):
    states, next_states, rewards = torch.randn(8, 3), torch.randn(8, 3), torch.randn(8, 1)
    with torch.no_grad():
        next_actions = policy(next_states)
        target = rewards + 0.99 * critic(torch.cat([next_states, next_actions], 1))
    policy_loss = -critic(torch.cat([states, policy(states)], 1)).mean()
    critic_loss = (critic(torch.cat([states, torch.zeros(8, 1)], 1)) - target).pow(2).mean()
    critic_optim.zero_grad()
    critic_loss.backward()
    critic_optim.step()  # <- step
    policy_optim.zero_grad()
    policy_loss.backward()  # <- refused
    policy_optim.step()
"""


def test_a_backward_refused_for_the_policy_is_its_only_finding(snippet):
    script = snippet(SAC)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        with trace() as traced:
            exec(compile(script.code, str(script.path), "exec"), {"__name__": "__main__"})
    assert [(f.kind, f.severity, f.line) for f in traced.findings if f.severity in ("error", "warning")] == [
        ("inplace_saved", "error", script.line("step"))]
    assert "a backward PyTorch refused (below) did not give it" in traced.report()
