"""Findings about a module's parameters go to the line that set the module where the mistake is: the
parent's ``self.block = Block()`` for a submodule the forward never calls, the ``self.layers = [...]`` for
modules kept in a plain list (and the lines that fill an empty dict, when that is where they come from)."""
from __future__ import annotations

import textwrap

import pytest

PRELUDE = """
import torch
from torch import nn
import torch.nn.functional as F
torch.manual_seed(0)
x, y = torch.randn(8, 4), torch.randn(8, 1)

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(4, 4)

    def forward(self, h):
        return torch.relu(self.inner(h))
"""

TRAIN = """
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    loss = F.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def loud(snippet, code: str):
    script = snippet(PRELUDE + textwrap.dedent(code) + TRAIN)
    return script, [f for f in script.run().findings if f.severity in ("error", "warning")]


def test_a_submodule_the_forward_never_calls_is_named_where_its_parent_sets_it(snippet):
    script, found = loud(snippet, """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.used = Block()
        self.skipped = Block()  # <- unused
        self.head = nn.Linear(4, 1)

    def forward(self, h):
        return self.head(self.used(h))

model = Net()
""")
    assert {(f.kind, f.line) for f in found} == {("unused_parameter", script.line("unused"))}
    assert all(f.tensor.startswith("Net.skipped.inner.") for f in found)
    assert all("its forward was never called" in f.message for f in found)


def test_a_submodule_called_whose_output_is_dropped_is_told_apart_from_one_never_called(snippet):
    script, found = loud(snippet, """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.used = Block()
        self.aux = Block()  # <- defined
        self.head = nn.Linear(4, 1)

    def forward(self, h):
        h = self.used(h)
        extra = self.aux(h)  # <- called
        return self.head(h)

model = Net()
""")
    assert {(f.kind, f.line) for f in found} == {("unused_parameter", script.line("defined"))}
    called = f"{script.path.name}:{script.line('called')}"
    assert all(f"Block was called at {called}, but no backward went through its output" in f.message
               and "never called" not in f.message for f in found)
    assert all((r.role, r.line) == ("used", script.line("called")) for f in found for r in f.related)


def test_the_call_named_is_that_of_the_outermost_module_that_learnt_nothing(snippet):
    script, found = loud(snippet, """
class Neck(nn.Module):
    def __init__(self):
        super().__init__()
        self.fuse = nn.Linear(4, 4)
        self.aux_head = Block()  # <- defined

    def forward(self, h):
        return self.fuse(h), self.aux_head(h)  # <- called

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.neck = Neck()
        self.head = nn.Linear(4, 1)

    def forward(self, h):
        h, _ = self.neck(h)
        return self.head(h)

model = Net()
""")
    assert {(f.kind, f.line) for f in found} == {("unused_parameter", script.line("defined"))}
    assert all(f.tensor.startswith("Net.neck.aux_head.inner.") for f in found)
    assert all(f"Block was called at {script.path.name}:{script.line('called')}," in f.message for f in found)


def test_modules_in_a_plain_list_are_named_at_the_list(snippet):
    script, found = loud(snippet, """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = [Block(), Block()]  # <- list
        self.head = nn.Linear(4, 1)

    def forward(self, h):
        for block in self.blocks:
            h = block(h)
        return self.head(h)

model = Net()
""")
    assert {(f.kind, f.line) for f in found} == {("non_parameter_tensor", script.line("list"))}


def test_parameters_put_into_an_empty_dict_are_named_where_the_dict_is_made(snippet):
    """The fix is ``nn.ParameterDict()`` where the dict is made (a dict of dicts is told where the inner
    dicts holding the Parameters are made: tests/cases/b4_params_in_plain_dict)."""
    script, found = loud(snippet, """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.scales = {}  # <- made
        for name in ("a", "b"):
            self.scales[name] = nn.Parameter(torch.ones(4))
        self.head = nn.Linear(4, 1)

    def forward(self, h):
        return self.head(h * self.scales["a"] * self.scales["b"])

model = Net()
""")
    assert {(f.kind, f.line) for f in found} == {("non_parameter_tensor", script.line("made"))}


def test_a_non_leaf_made_inside_a_helper_is_named_at_the_call_that_returned_it(snippet):
    script = snippet(PRELUDE + textwrap.dedent("""
    w = torch.randn(4, 1, requires_grad=True)

    def project(points, weight):
        cam = points @ weight  # made here, inside the helper
        return {"cam": cam, "out": cam.sum()}

    info = project(x, w)  # <- call
    info["out"].backward()
    print(info["cam"].grad)  # <- symptom
    """))
    found = [f for f in script.run().findings if f.kind == "non_leaf_watched"]
    assert [f.line for f in found] == [script.line("call")]
    assert ("symptom", script.line("symptom")) in {(p.role, p.line) for p in found[0].related}


def test_a_custom_functions_output_rebinding_the_leafs_name_is_named_at_that_line(snippet):
    """``conf = soft_sort(conf)`` with a custom Function inside the helper (b40a_fast_soft_sort): the read finds the
    Function's output, and the line that rebound the name is the one to change, not the read; the read after the
    backward is the symptom."""
    script = snippet(PRELUDE + textwrap.dedent("""
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, values):
            ctx.save_for_backward(values)
            return values * values

        @staticmethod
        def backward(ctx, grad):
            (values,) = ctx.saved_tensors
            return 2 * values * grad

    def squared(values):
        return Square.apply(values)

    conf = torch.tensor([0.1, 0.7, 0.2], requires_grad=True)
    conf = squared(conf)  # <- rebound
    print(conf.grad)  # read before the backward too, as the report did
    conf.sum().backward()
    print(conf.grad)  # <- symptom
    """))
    found = [f for f in script.run().findings if f.kind == "non_leaf_watched"]
    assert [f.line for f in found] == [script.line("rebound")]
    assert ("symptom", script.line("symptom")) in {(p.role, p.line) for p in found[0].related}


TWICE = """
class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attention = nn.Linear(4, 4)
        self.cross_attention = nn.Linear(4, 4)

    def forward(self, h, memory):
        h = h + self.self_attention(h)
        return h + self.self_attention(h)  # <- again


model = Layer()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    loss = F.mse_loss(model(x, x), torch.zeros_like(x))
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_a_module_never_called_while_its_twin_is_called_twice_is_named_at_the_second_call(snippet):
    """A decoder layer whose cross-attention call was written as a second self-attention call (b41f_transformer): the
    module of the same class that is never called is named at the twin's second call, the line to change."""
    script = snippet(PRELUDE + TWICE)
    found = [f for f in script.run().findings if f.severity in ("error", "warning")]
    assert {(f.kind, f.line) for f in found} == {("unused_parameter", script.line("again"))}
    assert "`cross_attention` is never called" in found[0].message
    fixed = snippet(PRELUDE + TWICE.replace("h + self.self_attention(h)  #", "h + self.cross_attention(h)  #"))
    assert [f for f in fixed.run().findings if f.severity in ("error", "warning")] == []


def test_of_several_in_place_writes_into_a_saved_tensor_the_first_is_named(snippet):
    script = snippet(PRELUDE + textwrap.dedent("""
    w = torch.randn(4, 4, requires_grad=True)
    att = torch.sigmoid(x @ w)
    att[:, 0] = 0  # <- first
    att[:, -1] = 0
    try:
        att.sum().backward()
    except RuntimeError:
        pass
    """))
    found = [f for f in script.run().findings if f.kind == "inplace_saved" and f.severity == "error"]
    assert [f.line for f in found] == [script.line("first")]


def test_of_several_optimizer_steps_before_a_backward_that_saved_their_weights_the_first_is_named(snippet):
    """Two critics stepped before the actor's loss, computed from both, is backpropagated: every step from the
    first on made the graph stale (b11_oac_sac_policy_loss_before_critic_steps; one critic: b4_critic_step_before_actor,
    b7_sac_critic_step_before_policy_backward)."""
    script = snippet(PRELUDE + textwrap.dedent("""
    actor, critic_a, critic_b = nn.Linear(4, 2), nn.Linear(6, 1), nn.Linear(6, 1)
    opt_a = torch.optim.SGD(critic_a.parameters(), lr=0.1)
    opt_b = torch.optim.SGD(critic_b.parameters(), lr=0.1)
    pair = torch.cat([x, actor(x)], 1)
    actor_loss = -(critic_a(pair) + critic_b(pair)).mean()
    F.mse_loss(critic_a(pair.detach()), y).backward()
    opt_a.step()  # <- first
    F.mse_loss(critic_b(pair.detach()), y).backward()
    opt_b.step()
    try:
        actor_loss.backward()
    except RuntimeError:
        pass
    """))
    found = [f for f in script.run().findings if f.kind == "inplace_saved" and f.severity == "error"]
    assert [f.line for f in found] == [script.line("first")]


def test_the_step_named_is_of_weights_the_stale_graph_saved_not_of_others_of_the_same_shape(snippet):
    """Dreamer (b25b_dreamer): the world model's optimizer steps first, then the value model's, before the actor's
    backward through the values; both hold Linear weights of one shape, stepped as often. Only the value model's are
    inputs of the nodes whose saved tensors went stale: its step is the one named."""
    script = snippet(PRELUDE + textwrap.dedent("""
    world, actor, value = nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4)
    world_opt = torch.optim.Adam(world.parameters(), lr=0.1)
    value_opt = torch.optim.Adam(value.parameters(), lr=0.1)
    F.mse_loss(world(x), x).backward()
    world_opt.step()
    values = value(actor(world(x).detach()))
    value_opt.zero_grad()
    F.mse_loss(values, x.detach()).backward(retain_graph=True)
    value_opt.step()  # <- value
    try:
        (-values.mean()).backward()
    except RuntimeError:
        pass
    """))
    found = [f for f in script.run().findings if f.kind == "inplace_saved" and f.severity == "error"]
    assert [f.line for f in found] == [script.line("value")], [(f.line, f.message) for f in found]


def test_a_step_that_runs_before_a_backward_whose_gradients_are_then_cleared_is_named(snippet):
    script = snippet(PRELUDE + textwrap.dedent("""
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()  # <- step
        (0.1 * model(x).abs().mean()).backward()  # <- late
    """))
    found = [f for f in script.run().findings if f.kind == "optimizer"]
    assert [(f.line, f.severity) for f in found] == [(script.line("step"), "warning")]
    assert ("symptom", script.line("late")) in {(p.role, p.line) for p in found[0].related}


def test_gradients_accumulated_over_several_backwards_before_one_step_are_silent(snippet):
    script = snippet(PRELUDE + textwrap.dedent("""
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        opt.zero_grad()
        for half in (x[:4], x[4:]):
            model(half).abs().mean().backward()
        opt.step()
    """))
    assert [f for f in script.run().findings if f.severity in ("error", "warning")] == []


def test_a_list_of_parameters_its_modules_register_is_silent(snippet):
    """Keeping parameter groups as attributes (``self.encoder_params = list(self.encoder.parameters())``)
    hides nothing: the modules register them."""
    _, found = loud(snippet, """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body, self.head = Block(), nn.Linear(4, 1)
        self.body_params = list(self.body.parameters())

    def forward(self, h):
        return self.head(self.body(h))

model = Net()
""")
    assert found == []


def test_an_empty_list_filled_with_modules_is_named_where_it_was_made(snippet):
    script, found = loud(snippet, """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self._blocks = []  # <- list
        for _ in range(2):
            self._blocks.append(Block())
        self.head = nn.Linear(4, 1)

    def forward(self, h):
        for block in self._blocks:
            h = block(h)
        return self.head(h)

model = nn.Sequential(Net())
""")
    assert {(f.kind, f.line) for f in found} == {("non_parameter_tensor", script.line("list"))}


def test_a_non_leaf_given_to_an_optimizer_is_named_where_it_was_made(snippet):
    script = snippet(PRELUDE + textwrap.dedent("""
    image = torch.randn(8, 4, requires_grad=True) * 1e-3  # <- made
    opt = torch.optim.Adam([image], lr=0.1)  # <- refused
    """))
    from gradcheck_l2c.tracer import trace
    t = trace()
    try:
        with t:
            exec(compile(script.code, str(script.path), "exec"), {"__name__": "__main__"})
    except ValueError as error:
        assert "non-leaf" in str(error)
    found = [f for f in t.findings if f.kind == "non_leaf_watched"]
    assert [f.line for f in found] == [script.line("made")]
    assert "refused" in found[0].message


@pytest.mark.needs_torchvision
def test_a_library_layer_switched_on_and_never_used_is_named_where_it_was_switched_on(snippet):
    """kohya sd-scripts (eco24d_kohya): ``text_encoder.requires_grad_(True)`` makes a library model trainable whose last
    layer the loss never uses; freezing that layer after this line is the fix. A layer of the user's own model keeps
    its definition line (a module called but dropped)."""
    script = snippet("""
import torch
import torchvision
torch.manual_seed(0)
model = torchvision.models.googlenet(weights=None, aux_logits=True, init_weights=False, num_classes=3)
model.requires_grad_(True)  # <- thawed
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(2):
    loss = torch.nn.functional.cross_entropy(model(torch.randn(2, 3, 64, 64)).logits, torch.tensor([0, 1]))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
""")
    found = [f for f in script.run().findings if f.severity in ("error", "warning")]
    assert {(f.kind, f.line) for f in found} == {("unused_parameter", script.line("thawed"))}
    assert all(f.tensor.startswith(("GoogLeNet.aux1.", "GoogLeNet.aux2.")) for f in found)
    assert all("this line made it trainable" in f.message and "requires_grad_(False)" in f.fix for f in found)
    script, found = loud(snippet, """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.used = Block()
        self.aux = Block()  # <- defined
        self.head = nn.Linear(4, 1)

    def forward(self, h):
        h = self.used(h)
        extra = self.aux(h)
        return self.head(h)

model = Net()
model.requires_grad_(True)
""")
    assert {(f.kind, f.line) for f in found} == {("unused_parameter", script.line("defined"))}
