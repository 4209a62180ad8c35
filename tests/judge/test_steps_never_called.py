"""An optimizer whose parameters get gradients but whose step() the script never calls is named at the backward
that reaches only its parameters, where the call belongs: the run's first backward as well as a later one (the
two discriminators of b17c_deblurganv2, each with a backward of its own and neither stepped)."""
from __future__ import annotations

import textwrap

PRELUDE = """
import torch
from torch import nn
torch.manual_seed(0)
x = torch.randn(4, 6)
"""


def test_each_optimizer_never_stepped_is_named_at_its_own_backward_the_first_one_too(snippet):
    script = snippet(PRELUDE + textwrap.dedent("""
    generator, critic_a, critic_b = nn.Linear(6, 6), nn.Linear(6, 1), nn.Linear(6, 1)
    opt_g = torch.optim.Adam(generator.parameters())
    opt_a, opt_b = torch.optim.Adam(critic_a.parameters()), torch.optim.Adam(critic_b.parameters())
    for step in range(3):
        opt_a.zero_grad()
        opt_b.zero_grad()
        fake = generator(x)
        (critic_a(fake.detach()) - critic_a(x)).mean().backward()  # <- a
        (critic_b(fake.detach()) - critic_b(x)).mean().backward()  # <- b
        opt_g.zero_grad()
        (-critic_a(fake) - critic_b(fake)).mean().backward()
        opt_g.step()
    """))
    found = {(f.line, f.tensor.split(".")[0]) for f in script.run().findings if f.severity in ("error", "warning")}
    assert found == {(script.line("a"), "critic_a"), (script.line("b"), "critic_b")}, found
