"""Parameters that get gradients and that no optimizer steps, named where the fix goes: the optimizer nearest to
them in the module tree, a new model trained in place of the one the optimizer holds at the line that made it
(or set it into the model), and an optimizer whose step() the script never calls at the backward only its
parameters get."""
from __future__ import annotations

import textwrap

PRELUDE = """
import torch
from torch import nn
import torch.nn.functional as F
torch.manual_seed(0)
x, y = torch.randn(8, 4), torch.randn(8, 1)
"""

TRAIN = """
for step in range(3):
    loss = F.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def loud(snippet, code: str, train: str = TRAIN):
    script = snippet(PRELUDE + textwrap.dedent(code) + textwrap.dedent(train))
    return script, [f for f in script.run().findings if f.severity in ("error", "warning")]


def places(finding):
    return {(p.role, p.line) for p in finding.related}


def test_a_part_left_out_is_named_at_the_optimizer_of_its_nearest_relatives(snippet):
    script, found = loud(snippet, """
class Tower(nn.Module):
    def __init__(self):
        super().__init__()
        self.left, self.right = nn.Linear(4, 4), nn.Linear(4, 4)

    def forward(self, h):
        return self.left(h) + self.right(h)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem, self.tower, self.out = nn.Linear(4, 4), Tower(), nn.Linear(4, 1)

    def forward(self, h):
        return self.out(self.tower(self.stem(h)))

model = Net()
outer = torch.optim.SGD([*model.stem.parameters(), *model.out.parameters()], lr=0.1)
opt = torch.optim.SGD(model.tower.left.parameters(), lr=0.1)  # <- optimizer
""", TRAIN.replace("opt.step()", "opt.step()\n    outer.step()"))
    assert {(f.kind, f.line) for f in found} == {("optimizer", script.line("optimizer"))}
    assert {f.tensor for f in found} == {"Net.tower.right.weight", "Net.tower.right.bias"}


def test_a_new_model_bound_to_the_name_the_optimizer_left_is_named_where_it_is_made(snippet):
    script, found = loud(snippet, """
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)  # <- optimizer
model = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 1))  # <- made
""")
    made = [f for f in found if f.kind == "optimizer"]
    assert made and {f.line for f in made} == {script.line("made")}
    assert places(made[0]) == {("used", script.line("optimizer"))}
    assert "after this line" in made[0].fix


def test_a_new_part_trained_beside_the_optimizers_own_parameters_stays_at_the_optimizer(snippet):
    """The optimizer still steps parameters that learn: it was built too early, not left behind."""
    script, found = loud(snippet, """
body = nn.Linear(4, 4)
opt = torch.optim.SGD(body.parameters(), lr=0.1)  # <- optimizer
head = nn.Linear(4, 1)
model = lambda h: head(torch.relu(body(h)))
""")
    assert {(f.kind, f.line) for f in found} == {("optimizer", script.line("optimizer"))}


def test_a_module_trained_instead_of_a_frozen_model_is_named_where_it_joins_the_model(snippet):
    script, found = loud(snippet, """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body, self.adapter = nn.Linear(4, 1), nn.Identity()

    def plug(self, adapter):
        self.adapter = adapter

    def forward(self, h):
        return self.body(self.adapter(h))

model = Net().requires_grad_(False)
opt = torch.optim.SGD(model.parameters(), lr=0.1)  # <- optimizer
adapter = nn.Linear(4, 4)
model.plug(adapter)  # <- joined
""")
    assert {(f.kind, f.line) for f in found} == {("optimizer", script.line("joined"))}
    assert places(found[0]) == {("used", script.line("optimizer"))}


def test_an_optimizer_whose_step_is_never_called_is_named_at_the_backward_only_it_needs(snippet):
    script, found = loud(snippet, """
critic, actor = nn.Linear(4, 1), nn.Linear(4, 4)
critic_opt = torch.optim.Adam(critic.parameters(), lr=0.1)  # <- built
opt = torch.optim.Adam(actor.parameters(), lr=0.1)
model = lambda h: critic(actor(h))
""", """
for step in range(3):
    critic_opt.zero_grad()
    F.mse_loss(critic(x), y).backward()  # <- critic
    loss = -critic(actor(x)).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
""")
    assert {(f.kind, f.line) for f in found} == {("optimizer", script.line("critic"))}
    assert places(found[0]) == {("used", script.line("built"))}
    assert "critic_opt.step()" in found[0].fix


def test_a_parameter_made_anew_at_every_step_is_named_where_it_is_made(snippet):
    """A helper run at every step that wraps a new ``nn.Parameter``: each gets one gradient and is dropped, so
    the line that makes it is the one to change; one made once after the optimizer stays at the optimizer."""
    script, found = loud(snippet, """
def shifted(out):
    offset = nn.Parameter(torch.full((1,), 0.5))  # <- made
    return out + offset

body = nn.Linear(4, 1)
opt = torch.optim.SGD(body.parameters(), lr=0.1)  # <- optimizer
gain = nn.Parameter(torch.ones(1))
model = lambda h: shifted(body(h)) * gain
""")
    assert {(f.kind, f.line) for f in found} == {("optimizer", script.line("made")),
                                                 ("optimizer", script.line("optimizer"))}
    made = next(f for f in found if f.line == script.line("made"))
    assert places(made) >= {("used", script.line("optimizer"))} and "__init__" in made.fix
