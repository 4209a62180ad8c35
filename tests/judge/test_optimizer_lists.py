"""A parameter in no optimizer is named where it was left out: the line that built the list the optimizer
was given (a variable or ``self`` attribute assigned above, a module list gathered for it, a method of the user's that
returns the groups or all the optimizer's keyword arguments, the last of groups written one a line), a group built
beside that list and never given (where it was last extended), or the line of a forward that made it lazily after the
optimizer was built; otherwise the optimizer's own line (where it was built, for an optimizer class of the user's)."""
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
for step in range(2):
    loss = F.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def optimizer_findings(snippet, code: str):
    script = snippet(PRELUDE + textwrap.dedent(code) + TRAIN)
    found = [f for f in script.run().findings if f.kind == "optimizer"]
    return script, found


def places(finding):
    return {(p.role, p.line) for p in finding.related}


def test_a_list_built_in_a_variable_is_named_where_it_was_built(snippet):
    script, found = optimizer_findings(snippet, """
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
params = list(model[0].parameters()) + list(model[0].parameters())  # <- built
opt = torch.optim.SGD(params, lr=0.1)  # <- optimizer
""")
    assert {(f.line, f.tensor) for f in found} == {(script.line("built"), "Sequential.2.weight"),
                                                 (script.line("built"), "Sequential.2.bias")}
    assert ("used", script.line("optimizer")) in places(found[0])
    assert "parameter list built here" in found[0].fix


def test_of_two_branches_assigning_the_list_the_one_that_ran_is_named(snippet):
    """HHL's groups: the ``if`` builds a list of groups that leaves a layer out, the ``else`` below binds
    ``model.parameters()``; the optimizer was given the list, so its line is the one to change."""
    script, found = optimizer_findings(snippet, """
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
if hasattr(model, "0"):
    groups = [{"params": model[0].parameters(), "lr": 0.1}]  # <- built
else:
    groups = model.parameters()
opt = torch.optim.SGD(groups, lr=0.1)
""")
    assert {f.line for f in found} == {script.line("built")}


def test_a_new_phase_s_optimizer_that_leaves_out_what_the_old_one_held_is_named(snippet):
    """AWD-LSTM's switch to ASGD: the new optimizer is given ``model.parameters()`` where the old one had the
    criterion's parameters too; they still get gradients and stop changing. A new phase given everything is silent."""
    script = snippet(PRELUDE + textwrap.dedent("""
    model, criterion = nn.Linear(4, 1), nn.Linear(1, 1)
    opt = torch.optim.SGD([*model.parameters(), *criterion.parameters()], lr=0.1)
    for epoch in range(4):
        if epoch == 2:
            opt = torch.optim.ASGD(model.parameters(), lr=0.1)  # <- switch
        for step in range(2):
            loss = F.mse_loss(criterion(model(x)), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    """))
    found = [f for f in script.run().findings if f.severity in ("error", "warning")]
    assert {(f.kind, f.tensor, f.line) for f in found} == {("optimizer", "criterion.weight", script.line("switch")),
                                                          ("optimizer", "criterion.bias", script.line("switch"))}
    fixed = snippet(script.code.replace("ASGD(model.parameters()", "ASGD([*model.parameters(), *criterion.parameters()]"))
    assert [f for f in fixed.run().findings if f.severity in ("error", "warning")] == []


def test_groups_returned_by_a_method_are_named_at_its_return(snippet):
    script, found = optimizer_findings(snippet, """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body, self.head = nn.Linear(4, 8), nn.Linear(8, 1)

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))

    def groups(self, lr):
        return [{"params": self.head.parameters(), "lr": lr}]  # <- built

model = Net()
opt = torch.optim.SGD(model.groups(0.1), lr=0.1)
""")
    assert {f.line for f in found} == {script.line("built")}
    assert {f.tensor for f in found} == {"Net.body.weight", "Net.body.bias"}


def test_keyword_arguments_returned_by_a_helper_are_named_at_their_last_group(snippet):
    """``Adam(**get_params_options(args, model))``: the groups are the helper's, the left-out one goes after the
    last (ACEsuit/mace#1529)."""
    script, found = optimizer_findings(snippet, """
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1))

def options(lr):
    kwargs = dict(
        params=[
            {"params": model[0].parameters(), "weight_decay": 0.0},
            {"params": model[2].parameters()},  # <- last
        ],
        lr=lr,
    )
    return kwargs

opt = torch.optim.SGD(**options(0.1))  # <- optimizer
""")
    assert {(f.line, f.tensor) for f in found} == {(script.line("last"), "Sequential.4.weight"),
                                                 (script.line("last"), "Sequential.4.bias")}
    assert ("used", script.line("optimizer")) in places(found[0])


def test_keyword_arguments_a_helper_returns_as_a_literal_are_named_at_its_return(snippet):
    script, found = optimizer_findings(snippet, """
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))

def options():
    return {"params": model[0].parameters(), "lr": 0.1}  # <- built

opt = torch.optim.SGD(**options())
""")
    assert {f.line for f in found} == {script.line("built")}


def test_a_list_written_in_the_optimizer_call_stays_at_the_call(snippet):
    script, found = optimizer_findings(snippet, """
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(model[0].parameters(), lr=0.1)  # <- optimizer
""")
    assert {f.line for f in found} == {script.line("optimizer")}


def test_groups_written_one_a_line_in_the_call_are_named_at_the_last_group(snippet):
    """The group left out goes after the last one written."""
    script, found = optimizer_findings(snippet, """
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD([
    {"params": model[2].parameters(), "lr": 0.05},
    {"params": model[4].parameters()},  # <- last
], lr=0.1)
""")
    assert {(f.line, f.tensor) for f in found} == {(script.line("last"), "Sequential.0.weight"),
                                                 (script.line("last"), "Sequential.0.bias")}


GROUP_BUILT_BESIDE = """
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
groups = [{"params": [p for p in model.parameters() if p.dim() > 1]}]
biases = {"params": [], "weight_decay": 0.0}
for layer in (model[0], model[2]):
    biases["params"].append(layer.bias)  # <- extended
opt = torch.optim.SGD(groups, lr=0.1)  # <- optimizer
"""


def test_a_group_built_beside_the_list_and_never_given_is_named_where_it_was_last_extended(snippet):
    script, found = optimizer_findings(snippet, GROUP_BUILT_BESIDE)
    assert {(f.line, f.tensor) for f in found} == {(script.line("extended"), "Sequential.0.bias"),
                                                 (script.line("extended"), "Sequential.2.bias")}
    assert ("used", script.line("optimizer")) in places(found[0])
    fixed, found = optimizer_findings(snippet, GROUP_BUILT_BESIDE.replace("opt =", "groups.append(biases)\nopt ="))
    assert found == []


def test_a_parameter_made_lazily_in_forward_after_the_optimizer_is_named_where_it_is_made(snippet):
    script, found = optimizer_findings(snippet, """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)
        self.register_parameter("scale", None)

    def forward(self, x):
        if self.scale is None:
            self.scale = nn.Parameter(torch.ones(x.shape[1]))  # <- made
        return self.fc(x * self.scale)

model = Net()
opt = torch.optim.Adam(model.parameters(), lr=0.1)  # <- optimizer
""")
    assert [(f.line, f.tensor) for f in found] == [(script.line("made"), "Net.scale")]
    assert places(found[0]) == {("used", script.line("optimizer"))}
    assert "__init__" in found[0].fix


def test_a_parameter_made_anew_at_every_forward_is_named_at_the_forwards_line(snippet):
    """Conditional batch norm (b41c_cbn): a helper the forward calls at every step makes the module's scale as a new
    Parameter each time: weights built inside forward, named at the forward's call of the helper; made once, at the
    first call only, it is the lazy case above."""
    script = snippet(PRELUDE + textwrap.dedent("""
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def make_scale(self, width):
        self.scale = nn.Parameter(torch.ones(width))

    def forward(self, x):
        self.make_scale(x.shape[1])  # <- anew
        return self.fc(x * self.scale)

model = Net()
opt = torch.optim.Adam(model.parameters(), lr=0.1)
""") + TRAIN)
    found = [f for f in script.run().findings if f.severity in ("error", "warning")]
    assert [(f.kind, f.line, f.severity) for f in found] == [("module_in_forward", script.line("anew"), "error")]
    assert "__init__" in found[0].fix


def test_a_complete_list_in_a_variable_is_silent(snippet):
    script = snippet(PRELUDE + textwrap.dedent("""
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
params = list(model[0].parameters()) + list(model[2].parameters())
opt = torch.optim.SGD(params, lr=0.1)
""") + TRAIN)
    assert [f for f in script.run().findings if f.severity in ("error", "warning")] == []


#: An agent whose model is rebuilt after its optimizer was built, then loaded with the old values.
REBUILT = """
class Agent:
    def __init__(self):
        self.net = nn.Linear(4, 1)
        self.opt = torch.optim.Adam(self.net.parameters(), lr=0.1)  # <- optimizer

    def load(self, state):
        self.net = nn.Linear(4, 1)  # <- rebuilt
        self.net.load_state_dict(state)

agent = Agent()
agent.load(nn.Linear(4, 1).state_dict())
model, opt = agent.net, agent.opt
"""


def test_a_model_rebuilt_as_it_was_after_the_optimizer_is_named_at_the_rebuild(snippet):
    script, found = optimizer_findings(snippet, REBUILT)
    assert {f.line for f in found} == {script.line("rebuilt")}
    assert ("used", script.line("optimizer")) in places(found[0])
    assert "load_state_dict" in found[0].fix


def test_a_layer_resized_after_the_optimizer_stays_at_the_optimizer(snippet):
    """A layer of another shape is a model that changed, not a copy: the optimizer must be built after it."""
    script, found = optimizer_findings(snippet, """
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)  # <- optimizer
model[0], model[2] = nn.Linear(4, 6), nn.Linear(6, 1)
""")
    assert found and {f.line for f in found} == {script.line("optimizer")}


def test_of_two_optimizers_the_one_stepped_after_the_parameter_s_first_backward_is_the_one_that_left_it_out(snippet):
    """An actor-critic with an optimizer each (Replicable-MARL/MARLlib#146): the value encoder gets its gradients
    from the value loss, whose backward the critic's optimizer steps after; its list is the line to change, though
    the names (``value_encoder`` beside ``action_encoder`` and ``value_head``) tell nothing."""
    script = snippet(PRELUDE + textwrap.dedent("""
    class ActorCritic(nn.Module):
        def __init__(self):
            super().__init__()
            self.action_encoder, self.action_head = nn.Linear(4, 8), nn.Linear(8, 2)
            self.value_encoder, self.value_head = nn.Linear(4, 8), nn.Linear(8, 1)

    model = ActorCritic()
    actor = torch.optim.Adam(list(model.action_encoder.parameters()) + list(model.action_head.parameters()))
    critic = torch.optim.Adam(model.value_head.parameters())  # <- critic
    for step in range(2):
        actor.zero_grad()
        model.action_head(model.action_encoder(x)).logsumexp(1).mean().backward()
        actor.step()
        critic.zero_grad()
        F.mse_loss(model.value_head(torch.tanh(model.value_encoder(x))), y).backward()
        critic.step()
    """))
    found = [f for f in script.run().findings if f.kind == "optimizer"]
    assert {(f.line, f.tensor) for f in found} == {(script.line("critic"), "ActorCritic.value_encoder.weight"),
                                                  (script.line("critic"), "ActorCritic.value_encoder.bias")}


def test_a_parameter_in_an_optimizer_of_all_parameters_and_in_its_own_is_named_at_the_broad_one(snippet):
    """DARTS' architecture weights (dragen1860/DARTS-PyTorch#5): the weights' SGD took model.parameters(), the
    alphas too, beside the Adam built for the alphas alone; the SGD's list is what must leave them out."""
    script = snippet(PRELUDE + textwrap.dedent("""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
            self.alpha = nn.Parameter(torch.zeros(8))

        def forward(self, x):
            return self.body[2](self.body[1](self.body[0](x)) * torch.sigmoid(self.alpha))

    model = Net()
    weights = torch.optim.SGD(model.parameters(), lr=0.1)  # <- weights
    arch = torch.optim.Adam([model.alpha], lr=1e-3)  # <- arch
    for step in range(2):
        for opt in (arch, weights):
            opt.zero_grad()
            F.mse_loss(model(x), y).backward()
            opt.step()
    """))
    found = [f for f in script.run().findings if f.kind == "optimizer"]
    assert [(f.line, f.tensor) for f in found] == [(script.line("weights"), "Net.alpha")]
    assert places(found[0]) == {("used", script.line("arch"))}


def test_in_a_notebook_cell_a_model_rebuilt_after_the_optimizer_is_named_at_the_cell_s_line():
    """Code compiled under a pseudo file name (an IPython cell, ``exec``) keeps that name in every line the trace
    records: the line that asked for the new parameters is the cell's, like the line that set them into the model."""
    import linecache

    from gradcheck_l2c import trace

    cell = "<ipython-input-7-rebuilt>"
    code = PRELUDE + REBUILT + TRAIN
    lines = code.splitlines(keepends=True)
    linecache.cache[cell] = (len(code), None, lines, cell)  # as IPython registers a cell's source
    rebuilt = next(number for number, line in enumerate(lines, 1) if "# <- rebuilt" in line)
    try:
        with trace() as traced:
            exec(compile(code, cell, "exec"), {"__name__": "__main__"})
    finally:
        linecache.cache.pop(cell, None)
    found = [f for f in traced.findings if f.kind == "optimizer"]
    assert found and {(f.file, f.line) for f in found} == {(cell, rebuilt)}


def test_a_list_kept_as_an_attribute_is_named_where_it_was_built(snippet):
    script, found = optimizer_findings(snippet, """
class Learner:
    def __init__(self):
        self.model = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
        self.mixer = nn.Linear(8, 1)
        self.params = list(self.model.parameters())  # <- built
        self.optimiser = torch.optim.RMSprop(params=self.params, lr=0.01)  # <- optimizer

learner = Learner()
model, opt = (lambda x: learner.mixer(learner.model(x))), learner.optimiser
""")
    assert {f.line for f in found} == {script.line("built")} and len(found) == 2  # the mixer's weight and bias
    assert ("used", script.line("optimizer")) in places(found[0])


def test_a_module_list_gathered_for_the_optimizer_is_named_where_it_was_gathered(snippet):
    script, found = optimizer_findings(snippet, """
student, projector = nn.Linear(4, 8), nn.Linear(8, 1)
trainable = nn.ModuleList([student])  # <- gathered
opt = torch.optim.SGD(trainable.parameters(), lr=0.1)  # <- optimizer
model = nn.Sequential(student, projector)
""")
    assert {f.line for f in found} == {script.line("gathered")}
    assert ("used", script.line("optimizer")) in places(found[0])


def test_a_model_the_optimizer_was_given_is_not_where_a_left_out_layer_goes(snippet):
    script, found = optimizer_findings(snippet, """
body, head = nn.Sequential(nn.Linear(4, 8), nn.ReLU()), nn.Linear(8, 1)
opt = torch.optim.SGD(body.parameters(), lr=0.1)  # <- optimizer
model = nn.Sequential(body, head)
""")
    assert {f.line for f in found} == {script.line("optimizer")}


def test_an_optimizer_of_the_user_s_own_class_is_named_where_it_was_built_not_at_its_super_call(snippet):
    script, found = optimizer_findings(snippet, """
class HybridAdam(torch.optim.Adam):
    def __init__(self, params, lr, clipping_norm=1.0):
        super().__init__(params, lr=lr)  # <- super

model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt = HybridAdam(model[0].parameters(), lr=0.01)  # <- optimizer
""")
    assert {f.line for f in found} == {script.line("optimizer")}
    assert "HybridAdam" in found[0].message


def test_an_inner_step_undone_by_reloading_the_weights_is_no_clash_of_two_optimizers(snippet):
    """First-order MAML (dragen1860/MAML-Pytorch#9): an inner SGD and a meta Adam hold the same weights; each task
    saves them, steps the SGD and loads them back, so only the Adam's steps stay. Without the reload both rules
    update the weights: that stays a clash."""
    code = textwrap.dedent("""
    import copy
    model = nn.Linear(4, 1)
    inner = torch.optim.SGD(model.parameters(), lr=0.1)
    meta = torch.optim.Adam(model.parameters(), lr=1e-3)  # <- meta
    for it in range(2):
        total = [torch.zeros_like(p) for p in model.parameters()]
        for task in range(2):
            saved = copy.deepcopy(model.state_dict())
            inner.zero_grad()
            F.mse_loss(model(x), y).backward()
            inner.step()
            inner.zero_grad()
            F.mse_loss(model(x), y).backward()
            for t, p in zip(total, model.parameters()):
                t += p.grad
            RESTORE
        for p, t in zip(model.parameters(), total):
            p.grad = t / 2
        meta.step()
    """)
    restoring = snippet(PRELUDE + code.replace("RESTORE", "model.load_state_dict(saved)"))
    assert [f for f in restoring.run().findings if f.kind == "optimizer"] == []
    clashing = snippet(PRELUDE + code.replace("RESTORE", "pass"))
    found = [f for f in clashing.run().findings if f.kind == "optimizer"]
    assert {f.line for f in found} == {clashing.line("meta")} and len(found) == 2


def test_a_group_the_list_gets_only_under_an_if_the_run_did_not_take_is_named_at_the_if(snippet):
    """Proxy-Anchor's train.py (sung-yeon-kim/Proxy-Anchor-CVPR2020#25): the loss's proxies join the optimizer's
    groups only under ``if loss_name == 'Proxy_Anchor'``; a run with another loss trains them nowhere. The ``if``
    is the line to change; with its condition met the same lines are silent."""
    code = textwrap.dedent("""
    class Proxies(nn.Module):
        def __init__(self):
            super().__init__()
            self.proxies = nn.Parameter(torch.randn(3, 1))
        def forward(self, h):
            return (h - self.proxies.T).pow(2).mean()
    model, criterion = nn.Linear(4, 1), Proxies()
    loss_name = NAME
    groups = [{"params": model.parameters()}]
    if loss_name == "anchor":  # <- if
        groups.append({"params": criterion.parameters(), "lr": 1.0})
    opt = torch.optim.SGD(groups, lr=0.1)  # <- optimizer
    for step in range(2):
        loss = criterion(model(x))
        opt.zero_grad()
        loss.backward()
        opt.step()
    """)
    other = snippet(PRELUDE + code.replace("NAME", "'nca'"))
    found = [f for f in other.run().findings if f.kind == "optimizer"]
    assert [(f.line, f.tensor) for f in found] == [(other.line("if"), "Proxies.proxies")]
    assert "which the run did not take" in found[0].message
    assert ("used", other.line("optimizer")) in places(found[0])
    anchor = snippet(PRELUDE + code.replace("NAME", "'anchor'"))
    assert [f for f in anchor.run().findings if f.severity in ("error", "warning")] == []
