"""Every kind of cut: a small training snippet that triggers it, and a corrected twin that stays silent.

Assertions are on ``kind``, ``line`` and ``tensor`` of the findings, not on message wording.
"""
from __future__ import annotations

import textwrap

import pytest
import torch

from gradcheck_l2c.tracer import trace

PRELUDE = """
import numpy as np
import torch
from torch import nn
import torch.nn.functional as F
torch.manual_seed(0)
x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
"""


def program(code: str) -> str:
    return PRELUDE + textwrap.dedent(code)


def problems(t, severity=("error", "warning")):
    return [f for f in t.findings if f.severity in severity]


def kinds_at(t, tensor):
    return [(f.kind, f.line) for f in t.findings if f.tensor == tensor]


CASES = {
    "item": (
        """
        alpha = torch.zeros(3, requires_grad=True)
        model = nn.Linear(4, 3)
        w = torch.softmax(alpha, 0)
        scale = w[0].item()  # <- item
        loss = F.cross_entropy(model(x) * scale, y)
        loss.backward()
        """,
        """
        alpha = torch.zeros(3, requires_grad=True)
        model = nn.Linear(4, 3)
        w = torch.softmax(alpha, 0)
        print("w0", w[0].item())
        loss = F.cross_entropy(model(x) * w[0], y)
        loss.backward()
        """,
        "alpha",
    ),
    "numpy": (
        """
        alpha = torch.zeros(3, requires_grad=True)
        model = nn.Linear(4, 3)
        weights = torch.softmax(alpha, 0).detach().numpy()  # <- numpy
        loss = F.cross_entropy(model(x) * torch.from_numpy(weights), y)
        loss.backward()
        """,
        """
        alpha = torch.zeros(3, requires_grad=True)
        model = nn.Linear(4, 3)
        weights = torch.softmax(alpha, 0)
        np.save("/dev/null", weights.detach().numpy())
        loss = F.cross_entropy(model(x) * weights, y)
        loss.backward()
        """,
        "alpha",
    ),
    "tensor_rewrap": (
        """
        alpha = torch.zeros(3, requires_grad=True)
        model = nn.Linear(4, 3)
        w = torch.softmax(alpha, 0)
        stacked = torch.tensor([w[0], w[1], w[2]])  # <- tensor_rewrap
        loss = F.cross_entropy(model(x) * stacked, y)
        loss.backward()
        """,
        """
        alpha = torch.zeros(3, requires_grad=True)
        model = nn.Linear(4, 3)
        w = torch.softmax(alpha, 0)
        stacked = torch.stack([w[0], w[1], w[2]])
        loss = F.cross_entropy(model(x) * stacked, y)
        loss.backward()
        """,
        "alpha",
    ),
    "detach": (
        """
        alpha = torch.zeros(3, requires_grad=True)
        model = nn.Linear(4, 3)
        w = torch.softmax(alpha, 0).detach()  # <- detach
        loss = F.cross_entropy(model(x) * w, y)
        loss.backward()
        """,
        """
        alpha = torch.zeros(3, requires_grad=True)
        model = nn.Linear(4, 3)
        w = torch.softmax(alpha, 0)
        metric = w.detach().max()
        loss = F.cross_entropy(model(x) * w, y)
        loss.backward()
        """,
        "alpha",
    ),
    "data_attr": (
        """
        alpha = torch.zeros(3, requires_grad=True)
        model = nn.Linear(4, 3)
        w = torch.softmax(alpha, 0).data  # <- data_attr
        loss = F.cross_entropy(model(x) * w, y)
        loss.backward()
        """,
        """
        alpha = torch.zeros(3, requires_grad=True)
        model = nn.Linear(4, 3)
        w = torch.softmax(alpha, 0)
        loss = F.cross_entropy(model(x) * w, y)
        loss.backward()
        """,
        "alpha",
    ),
    "no_grad": (
        """
        alpha = torch.zeros(3, requires_grad=True)
        model = nn.Linear(4, 3)
        with torch.no_grad():
            w = torch.softmax(alpha, 0)  # <- no_grad
        loss = F.cross_entropy(model(x) * w, y)
        loss.backward()
        """,
        """
        alpha = torch.zeros(3, requires_grad=True)
        model = nn.Linear(4, 3)
        w = torch.softmax(alpha, 0)
        loss = F.cross_entropy(model(x) * w, y)
        loss.backward()
        with torch.no_grad():
            accuracy = (model(x) * w).argmax(1).eq(y).float().mean()
        """,
        "alpha",
    ),
    "state_dict_reload": (
        """
        alpha = torch.zeros(2, requires_grad=True)
        model = nn.Linear(4, 3)
        a, b = nn.Linear(4, 3), nn.Linear(4, 3)
        w = torch.softmax(alpha, 0)
        mixed = {k: w[0] * a.state_dict()[k] + w[1] * b.state_dict()[k] for k in a.state_dict()}
        model.load_state_dict(mixed)  # <- state_dict_reload
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        """,
        """
        alpha = torch.zeros(2, requires_grad=True)
        model = nn.Linear(4, 3)
        a, b = nn.Linear(4, 3), nn.Linear(4, 3)
        w = torch.softmax(alpha, 0)
        mixed = {k: w[0] * a.state_dict()[k] + w[1] * b.state_dict()[k] for k in a.state_dict()}
        loss = F.cross_entropy(torch.func.functional_call(model, mixed, (x,)), y)
        loss.backward()
        """,
        "alpha",
    ),
    "new_parameter": (
        """
        alpha = torch.zeros(3, requires_grad=True)
        model = nn.Linear(4, 3)
        scale = nn.Parameter(torch.softmax(alpha, 0) * 3)  # <- new_parameter
        loss = F.cross_entropy(model(x) * scale, y)
        loss.backward()
        """,
        """
        alpha = torch.zeros(3, requires_grad=True)
        model = nn.Linear(4, 3)
        scale = torch.softmax(alpha, 0) * 3
        loss = F.cross_entropy(model(x) * scale, y)
        loss.backward()
        """,
        "alpha",
    ),
    "non_differentiable": (
        """
        alpha = torch.zeros(3, requires_grad=True)
        model = nn.Linear(4, 3)
        pick = torch.softmax(alpha + torch.arange(3.0), 0).argmax()  # <- non_differentiable
        loss = F.cross_entropy(model(x) * (1.0 + pick), y)
        loss.backward()
        """,
        """
        alpha = torch.zeros(3, requires_grad=True)
        model = nn.Linear(4, 3)
        soft = torch.softmax(alpha + torch.arange(3.0), 0)
        loss = F.cross_entropy(model(x) * (1.0 + soft), y)
        loss.backward()
        """,
        "alpha",
    ),
}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_cut_is_found_at_its_line(snippet, kind):
    buggy, _, tensor = CASES[kind]
    script = snippet(program(buggy))
    t = script.run()
    assert (kind, script.line(kind)) in kinds_at(t, tensor), t.findings
    mine = [f for f in t.findings if f.tensor == tensor]
    assert mine[0].kind == kind and mine[0].severity == "error"
    assert mine[0].file == str(script.path) and mine[0].code and mine[0].fix
    assert {w.name: w.got_grad for w in t.watched}[tensor] is False


@pytest.mark.parametrize("kind", sorted(CASES))
def test_corrected_twin_is_silent(snippet, kind):
    _, fixed, tensor = CASES[kind]
    t = snippet(program(fixed)).run()
    assert problems(t) == []
    assert {w.name: w.got_grad for w in t.watched}[tensor] is True


FROZEN_COPY = """
class Blur(nn.Module):
    def set_kernel(self, kernel):
        self.kernel = {wrap}  # <- wrapped

    def forward(self, x):
        return x * self.kernel


kernel = torch.rand(4).requires_grad_()
blur = Blur()
for step in range(3):
    blur.set_kernel(kernel)
    loss = F.mse_loss(blur(torch.randn(8, 4)), torch.zeros(8, 4))
    {differentiate}
    with torch.no_grad():
        kernel -= 0.1 * grad
"""


@pytest.mark.parametrize("differentiate", ["(grad,) = torch.autograd.grad(loss, kernel)",
                                           "loss.backward(); grad = kernel.grad"])
def test_a_leaf_wrapped_in_a_parameter_that_requires_no_grad_is_cut_there(snippet, differentiate):
    """``nn.Parameter(kernel, requires_grad=False)`` shares the leaf's values in a new leaf without gradient (deepinv's
    blur filter): the backward meant for the leaf stops there, named at the wrap; the leaf itself, kept, is silent."""
    script = snippet(program(FROZEN_COPY.format(wrap="nn.Parameter(kernel, requires_grad=False)",
                                                differentiate=differentiate)))
    t = trace()
    try:
        with t:
            exec(compile(script.code, str(script.path), "exec"), {"__name__": "__main__"})
    except (RuntimeError, TypeError):  # autograd.grad refuses; `0.1 * None` after the backward that gave none
        pass
    found = [f for f in problems(t) if f.tensor == "kernel"]
    assert [(f.kind, f.severity, f.line) for f in found][:1] == [("new_parameter", "error", script.line("wrapped"))]
    assert "requires_grad=False" in found[0].message and "register_buffer" in found[0].fix


def test_a_leaf_kept_as_an_attribute_and_learnt_by_hand_is_silent(snippet):
    """The corrected twin: the module keeps the leaf itself, whose gradient the script asks autograd.grad for and
    applies by hand; it learns, so neither the wrap nor the plain attribute is told."""
    fixed = snippet(program(FROZEN_COPY.format(wrap="kernel",
                                               differentiate="(grad,) = torch.autograd.grad(loss, kernel)"))).run()
    assert problems(fixed) == []


def test_zero_derivative_op_explains_an_all_zero_gradient(snippet):
    script = snippet(program("""
    alpha = torch.full((3,), 0.3, requires_grad=True)
    model = nn.Linear(4, 3)
    steps = torch.round(alpha * 4)  # <- round
    loss = F.cross_entropy(model(x) * steps, y)
    loss.backward()
    print(alpha.grad)
    """))
    t = script.run()
    found = [f for f in t.findings if f.tensor == "alpha"]
    assert [(f.kind, f.line) for f in found] == [("non_differentiable", script.line("round"))]


def test_chain_is_listed_in_flow_order(snippet):
    script = snippet(program("""
    alpha = torch.zeros(2, requires_grad=True)
    model, a, b = nn.Linear(4, 3), nn.Linear(4, 3), nn.Linear(4, 3)
    w = torch.softmax(alpha, 0)
    w0, w1 = w[0].item(), w[1].item()  # <- item
    mixed = {k: w0 * a.state_dict()[k] + w1 * b.state_dict()[k] for k in a.state_dict()}
    model.load_state_dict(mixed)  # <- reload
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    """))
    t = script.run()
    assert kinds_at(t, "alpha") == [("item", script.line("item")), ("state_dict_reload", script.line("reload"))]


def test_no_grad_rebinding_is_explained_when_backward_fails(snippet):
    script = snippet(program("""
    w = torch.randn(4, 3, requires_grad=True)
    for step in range(2):
        loss = F.cross_entropy(x @ w, y)
        loss.backward()
        with torch.no_grad():
            w = w - 0.1 * w.grad  # <- no_grad
    """))
    with pytest.raises(RuntimeError, match="does not require grad") as error:
        script.run()
    note = "\n".join(getattr(error.value, "__notes__", []))
    assert f"{script.path.name}:{script.line('no_grad')}" in note


@pytest.mark.parametrize("use, named", [
    ("edge.set_value(self.weight.sigmoid())  # <- use", "use"),  # computed with, the result dropped
    ("solve(x, params=(self.weight,))  # <- use", "made"),  # handed on, never computed with: the definition
])
def test_a_parameter_forward_computes_with_and_drops_is_named_where_it_does(snippet, use, named):
    """PyG's SparseTensor.set_value returns a new tensor: forward computes an edge weight from the parameter and
    drops it. A parameter forward only hands to a function that ignores it stays named where it is made."""
    script = snippet(program(f"""
    class Edge:
        def set_value(self, value):
            return Edge()
    def solve(x, params=()):
        return x
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(4))  # <- made
            self.fc = nn.Linear(4, 3)
        def forward(self, x, edge):
            {use}
            return self.fc(x)
    model = Net()
    for _ in range(2):
        F.cross_entropy(model(x, Edge()), y).backward()
    """))
    found = [(f.kind, f.line) for f in script.run().findings if f.severity == "error"]
    assert found == [("unused_parameter", script.line(named))]


@pytest.mark.parametrize("branches", [
    "if accumulate > 1:\n            loss = loss / accumulate\n        else:  # <- branch\n            loss.backward()",
    "if accumulate == 1:  # <- branch\n            loss.backward()",
])
def test_a_backward_kept_in_a_branch_never_taken_is_named_at_the_branch(snippet, branches):
    """BERT_FP's gradient accumulation: the only ``loss.backward()`` sits in a branch the run never takes, so no
    backward runs and every step is void: named at the branch, the step as symptom."""
    script = snippet(program(f"""
    model, accumulate = nn.Linear(4, 3), 2
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(4):
        loss = F.cross_entropy(model(x), y)
        {branches}
        if (step + 1) % accumulate == 0:
            opt.step()  # <- step
            opt.zero_grad()
    """))
    found = [f for f in script.run().findings if f.kind == "optimizer"]
    assert [(f.severity, f.line) for f in found] == [("error", script.line("branch"))]
    assert ("symptom", script.line("step")) in {(r.role, r.line) for r in found[0].related}


@pytest.mark.parametrize("clear", ["opt.zero_grad()", "model.zero_grad()"])
def test_a_gradient_read_after_zero_grad_set_it_to_none_is_named_at_the_zero_grad(snippet, clear):
    """The script prints ``w.grad`` after ``step()`` and ``zero_grad()`` and sees None every time, though each
    backward gave it one (set_to_none=True since PyTorch 2.0): named at the zero_grad, the read as its symptom; a read
    between backward and zero_grad is silent."""
    script = snippet(program(f"""
    model = nn.Linear(4, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        F.cross_entropy(model(x), y).backward()
        opt.step()
        {clear}  # <- clear
        print(model.weight.grad)  # <- read
    """))
    found = [f for f in script.run().findings if f.severity in ("error", "warning")]
    assert [(f.kind, f.tensor, f.line) for f in found] == [("optimizer", "Linear.weight", script.line("clear"))]
    assert ("symptom", script.line("read")) in {(r.role, r.line) for r in found[0].related}
    moved = script.code.replace(f"    {clear}  # <- clear\n    print(model.weight.grad)", f"    print(model.weight.grad)\n    {clear}")
    assert moved != script.code
    fixed = snippet(moved)
    assert [f for f in fixed.run().findings if f.severity in ("error", "warning")] == []
    initialised = snippet(program(f"""
    model = nn.Linear(4, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        {clear}
        for p in model.parameters():  # gradients made before the backward, as Reptile's and PCGrad's loops do
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        F.cross_entropy(model(x), y).backward()
        opt.step()
    """))
    assert [f for f in initialised.run().findings if f.severity in ("error", "warning")] == []


def test_unused_parameter_names_the_submodule(snippet):
    script = snippet(program("""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(4, 3)
            self.head = nn.Linear(3, 3)  # <- head
        def forward(self, x):
            return self.body(x)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    """))
    t = script.run()
    found = {(f.kind, f.tensor, f.line) for f in t.findings}
    assert ("unused_parameter", "Net.head.weight", script.line("head")) in found
    assert all(f.severity == "warning" for f in t.findings)
    explicit = script.run(watch=["*.head.*"])
    assert {f.severity for f in explicit.findings} == {"error"}


def test_non_parameter_tensor_and_its_registered_twin(snippet):
    buggy = snippet(program("""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 3)
            self.scale = torch.ones(3, requires_grad=True)  # <- attr
            self.extra = [nn.Parameter(torch.ones(3))]  # <- list
        def forward(self, x):
            return self.fc(x) * self.scale * self.extra[0]
    model = Net()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    """))
    t = buggy.run()
    found = {(f.kind, f.tensor, f.line) for f in t.findings}
    assert ("non_parameter_tensor", "Net.scale", buggy.line("attr")) in found
    assert ("non_parameter_tensor", "Net.extra", buggy.line("list")) in found
    fixed = snippet(program("""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 3)
            self.scale = nn.Parameter(torch.ones(3))
            self.extra = nn.ParameterList([nn.Parameter(torch.ones(3))])
        def forward(self, x):
            return self.fc(x) * self.scale * self.extra[0]
    model = Net()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    """))
    assert problems(fixed.run()) == []


def test_module_built_in_forward(snippet):
    buggy = snippet(program("""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 3)
        def forward(self, x):
            head = nn.Linear(3, 3)  # <- built
            return head(self.fc(x))
    model = Net()
    for _ in range(3):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
    """))
    t = buggy.run()
    found = [f for f in t.findings if f.kind == "module_in_forward"]
    assert [(f.line, f.count) for f in found] == [(buggy.line("built"), 3)]
    assert "Net" in found[0].tensor and found[0].severity == "error"


def test_a_user_module_built_in_forward_is_named_at_the_forward_s_line(snippet):
    """PyG issue #1394's EdgePooling: its forward builds a scoring module of the user's own class, whose
    ``__init__`` makes the layers. The line to change is the forward's, and the module to move is the user's
    (not the Linear its ``__init__`` makes, on a line that is right where it is)."""
    buggy = snippet(program("""
    class Scorer(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.lin = nn.Linear(width, 3)
        def forward(self, h):
            return self.lin(h)
    class Pool(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
        def forward(self, x):
            scorer = Scorer(x.size(1))  # <- built
            return scorer(self.fc(x))
    model = Pool()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    """))
    found = [f for f in buggy.run().findings if f.kind == "module_in_forward"]
    assert [(f.line, f.count) for f in found] == [(buggy.line("built"), 3)]
    assert found[0].tensor.startswith("Scorer") and "Scorer is constructed inside Pool.forward" in found[0].message


def test_a_head_built_lazily_by_a_dry_run_before_the_optimizer_is_no_module_made_anew(snippet):
    """byol-pytorch's NetWrapper: the projector is built at the first forward, kept on the module and reused; a dry
    run in __init__ builds it before the optimizer, which then holds it. Built that way after the optimizer, the
    head is still named (the optimizer never sees it)."""
    code = """
    class Wrapper(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 3)
            self.head = None
        def forward(self, x):
            if self.head is None:
                self.head = nn.Linear(3, 3)  # <- built
            return self.head(self.fc(x))
    model = Wrapper()
    DRY
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    """
    quiet = snippet(program(code.replace("DRY", "model(x)")))
    assert problems(quiet.run()) == []
    late = snippet(program(code.replace("DRY", "pass")))
    found = [f for f in late.run().findings if f.kind == "module_in_forward"]
    assert [(f.line, f.count) for f in found] == [(late.line("built"), 1)]


def test_non_leaf_watched_names_the_conversion(snippet):
    script = snippet(program("""
    w = torch.randn(4, 3, dtype=torch.float64, requires_grad=True).float()  # <- made
    loss = F.cross_entropy(x @ w, y)
    loss.backward()
    print(w.grad)  # <- read
    """))
    t = script.run()
    found = [f for f in t.findings if f.kind == "non_leaf_watched"]
    assert [(f.tensor, f.line) for f in found] == [("w", script.line("made"))]
    assert [(r.role, r.line) for r in found[0].related] == [("symptom", script.line("read"))]


def test_a_non_leaf_read_as_an_attribute_is_named_where_the_method_made_it(snippet):
    """``model.out.grad`` of a result forward keeps on the module: the line in forward that made it, not the call of
    the model that returned it under another name."""
    script = snippet(program("""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 3)
        def forward(self, x):
            self.out = self.fc(x)  # <- made
            return self.out
    model = Net()
    for _ in range(2):
        out = model(x)
        F.cross_entropy(out, y).backward()
        print(model.out.grad)  # <- read
    """))
    found = [f for f in script.run().findings if f.kind == "non_leaf_watched"]
    assert [(f.tensor, f.line) for f in found] == [("model.out", script.line("made"))]
    assert [(r.role, r.line) for r in found[0].related] == [("symptom", script.line("read"))]
    assert "retain_grad() on the out this line makes" in found[0].fix


def test_inplace_saved_error_is_enriched_with_both_lines(snippet):
    script = snippet(program("""
    w = torch.randn(4, 3, requires_grad=True)
    h = (x @ w).exp()
    out = h * 2
    h.add_(1)  # <- inplace
    out.sum().backward()
    """))
    with pytest.raises(RuntimeError, match="modified by an inplace operation") as error:
        script.run()
    note = "\n".join(getattr(error.value, "__notes__", []))
    assert f"{script.path.name}:{script.line('inplace')}" in note


def test_state_dict_alias_and_a_real_copy(snippet):
    buggy = snippet(program("""
    model = nn.Linear(4, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    before = model.state_dict().copy()  # <- alias
    F.cross_entropy(model(x), y).backward()
    optimizer.step()
    change = {k: model.state_dict()[k] - before[k] for k in before}  # <- read
    """))
    t = buggy.run()
    assert [(f.kind, f.line) for f in t.findings] == [("state_dict_alias", buggy.line("alias"))]
    assert [(r.role, r.line) for r in t.findings[0].related] == [("symptom", buggy.line("read"))]
    fixed = snippet(program("""
    model = nn.Linear(4, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    F.cross_entropy(model(x), y).backward()
    optimizer.step()
    change = {k: model.state_dict()[k] - before[k] for k in before}
    """))
    assert fixed.run().findings == []


def test_optimizer_membership(snippet):
    buggy = snippet(program("""
    model = nn.Linear(4, 3)
    alpha = nn.Parameter(torch.zeros(3))
    model.register_parameter("alpha", alpha)
    sgd = torch.optim.SGD(model.parameters(), lr=0.1)  # <- broad
    adam = torch.optim.Adam([model.alpha], lr=0.1)
    loss = F.cross_entropy(model(x) + model.alpha, y)
    loss.backward()
    sgd.step(); adam.step()
    """))
    found = [(f.kind, f.tensor, f.line) for f in buggy.run().findings]
    assert found == [("optimizer", "Linear.alpha", buggy.line("broad"))]  # the one that took every parameter
    fixed = snippet(program("""
    model = nn.Linear(4, 3)
    alpha = nn.Parameter(torch.zeros(3))
    model.register_parameter("alpha", alpha)
    sgd = torch.optim.SGD([model.weight, model.bias], lr=0.1)
    adam = torch.optim.Adam([model.alpha], lr=0.1)
    loss = F.cross_entropy(model(x) + model.alpha, y)
    loss.backward()
    sgd.step(); adam.step()
    """))
    assert fixed.run().findings == []


def test_normal_training_idioms_are_silent(snippet):
    script = snippet(program("""
    import copy
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    frozen = nn.Linear(4, 3).requires_grad_(False)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    model.load_state_dict(copy.deepcopy(model.state_dict()))
    total = 0.0
    for epoch in range(3):
        optimizer.zero_grad()
        out = model(x) + frozen(x)
        loss = F.cross_entropy(out, y)
        loss.backward()
        optimizer.step()
        total += loss.item()
        acc = (out.detach().argmax(1) == y).float().mean().item()
        with torch.no_grad():
            val = F.cross_entropy(model(x), y).item()
    best = copy.deepcopy(model.state_dict())
    model.load_state_dict(best)
    target = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    target.load_state_dict(model.state_dict())
    for step in range(2):
        with torch.no_grad():
            goal = target(x).max(1).values
        q = model(x).max(1).values
        optimizer.zero_grad()
        F.mse_loss(q, goal).backward()
        optimizer.step()
    """))
    assert script.run().findings == []


def test_watch_patterns_narrow_and_report_unmatched(snippet):
    script = snippet(program(CASES["detach"][0]))
    t = script.run(watch=["alpha", "nothing_*"])
    assert {f.tensor for f in t.findings} == {"alpha"}
    assert t.unmatched_patterns == ["nothing_*"]
    assert "alpha" in t.watched_names


TWINS = {
    "module_in_forward": """
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 3)
            self.head = nn.Linear(3, 3)
        def forward(self, x):
            return self.head(self.fc(x))
    model = Net()
    for _ in range(3):
        F.cross_entropy(model(x), y).backward()
    """,
    "non_leaf_watched": """
    w = torch.randn(4, 3, dtype=torch.float64).float().requires_grad_()
    F.cross_entropy(x @ w, y).backward()
    print(w.grad.shape)
    """,
    "inplace_saved": """
    w = torch.randn(4, 3, requires_grad=True)
    h = (x @ w).exp()
    out = h * 2
    h = h + 1
    out.sum().backward()
    """,
    "unused_parameter": """
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(4, 3)
            self.head = nn.Linear(3, 3)
        def forward(self, x):
            return self.head(self.body(x))
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    F.cross_entropy(model(x), y).backward()
    optimizer.step()
    """,
    "non_differentiable": """
    alpha = torch.full((3,), 0.3, requires_grad=True)
    model = nn.Linear(4, 3)
    steps = alpha * 4 + (torch.round(alpha * 4) - alpha * 4).detach()
    F.cross_entropy(model(x) * steps, y).backward()
    print(alpha.grad)
    """,
}


@pytest.mark.parametrize("kind", sorted(TWINS))
def test_scanner_twins_are_silent(snippet, kind):
    t = snippet(program(TWINS[kind])).run()
    assert t.findings == []
    assert all(w.got_grad for w in t.watched)


def test_custom_function_that_drops_a_gradient(snippet):
    buggy = snippet(program("""
    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            return x * w
        @staticmethod
        def backward(ctx, grad):
            return grad, None  # <- return
    w = nn.Parameter(torch.ones(4))  # <- param
    optimizer = torch.optim.SGD([w], lr=0.1)
    Scale.apply(x, w).sum().backward()
    """))
    t = buggy.run()
    # the user's own Function: named at its backward's return, which hands w no gradient
    assert [(f.kind, f.tensor, f.line) for f in t.findings] == [("non_differentiable", "w", buggy.line("return"))]
    assert "ScaleBackward" in t.findings[0].message
    assert [(r.role, r.line) for r in t.findings[0].related] == [("defined", buggy.line("param"))]
    fixed = snippet(program("""
    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return x * w
        @staticmethod
        def backward(ctx, grad):
            x, w = ctx.saved_tensors
            return grad * w, (grad * x).sum(0)
    w = nn.Parameter(torch.ones(4))
    optimizer = torch.optim.SGD([w], lr=0.1)
    Scale.apply(x, w).sum().backward()
    """))
    assert fixed.run().findings == []


def test_a_custom_function_that_drops_the_gradient_of_a_value_made_from_a_parameter(snippet):
    """nvdiffmodeling's fused point transform (NVlabs/nvdiffmodeling#11): the camera's parameter becomes a matrix
    through torch's ops (a view, a cat, a matmul) before the user's Function takes it; its backward returns None for
    the matrix. That return is to blame, not the view that took the parameter first; a second path to the
    parameter without any Function leaves nothing to blame on the Function."""
    function = """
    class Transform(torch.autograd.Function):
        @staticmethod
        def forward(ctx, points, matrix):
            ctx.save_for_backward(matrix)
            return points @ matrix
        @staticmethod
        def backward(ctx, grad):
            (matrix,) = ctx.saved_tensors
            return grad @ matrix.T, None  # <- return
    cam = nn.Parameter(torch.zeros(4))  # <- param
    optimizer = torch.optim.SGD([cam], lr=0.1)
    def matrix():
        return torch.eye(4) + torch.cat([cam.view(4, 1), torch.zeros(4, 3)], 1)
    """
    buggy = snippet(program(function + """
    Transform.apply(x, matrix()).sum().backward()
    optimizer.step()
    """))
    t = buggy.run()
    assert [(f.kind, f.tensor, f.line) for f in t.findings] == [("non_differentiable", "cam", buggy.line("return"))]
    assert "TransformBackward" in t.findings[0].message
    assert [(r.role, r.line) for r in t.findings[0].related] == [("defined", buggy.line("param"))]
    both = snippet(program(function + """
    (Transform.apply(x, matrix()).sum() + matrix().sum()).backward()
    optimizer.step()
    """))
    assert both.run().findings == []


def test_parameter_replaced_after_the_optimizer_was_built(snippet):
    script = snippet(program("""
    model = nn.Linear(4, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)  # <- built
    for epoch in range(2):
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
        model.weight = nn.Parameter(model.weight * 0.5)  # <- replaced
    """))
    findings = script.run().findings
    found = [(f.kind, f.tensor, f.line, f.severity) for f in findings]
    # a Parameter re-made in place of one the optimizer holds: the re-making line is the one to change
    assert found == [("optimizer", "Linear.weight", script.line("replaced"), "warning")]
    assert [(r.role, r.line) for r in findings[0].related] == [("used", script.line("built"))]
    assert "copy_" in findings[0].fix


def test_zero_grad_between_backward_and_step(snippet):
    buggy = snippet(program("""
    model = nn.Linear(4, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.zero_grad()  # <- erased
        optimizer.step()  # <- step
    """))
    findings = buggy.run().findings
    assert [(f.kind, f.line, f.count, f.severity) for f in findings] == [("optimizer", buggy.line("erased"), 3, "error")]
    assert [(p.role, p.line) for p in findings[0].related] == [("symptom", buggy.line("step"))]
    fixed = snippet(program("""
    model = nn.Linear(4, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
    optimizer.step()
    """))
    assert fixed.run().findings == []


def test_two_optimizers_given_each_other_s_parameters_are_named_where_they_were_built(snippet):
    # genrl's A2C (b21a_genrl): each step finds its gradients cleared by the other's zero_grad(), because the
    # backward before it reached only the other's parameters; not a zero_grad() in the wrong place
    buggy = snippet(program("""
    actor, critic = nn.Linear(4, 3), nn.Linear(4, 1)
    optimizer_policy = torch.optim.Adam(critic.parameters(), lr=0.01)  # <- policy
    optimizer_value = torch.optim.Adam(actor.parameters(), lr=0.01)  # <- value
    for step in range(3):
        optimizer_policy.zero_grad()
        F.cross_entropy(actor(x), y).backward()
        optimizer_policy.step()  # <- policy_step
        optimizer_value.zero_grad()
        critic(x).pow(2).mean().backward()
        optimizer_value.step()
    """))
    findings = buggy.run().findings
    assert sorted((f.kind, f.line, f.severity) for f in findings) == [
        ("optimizer", buggy.line("policy"), "warning"), ("optimizer", buggy.line("value"), "warning")]
    policy = next(f for f in findings if f.line == buggy.line("policy"))
    assert {(p.role, p.line) for p in policy.related} == {("symptom", buggy.line("policy_step")),
                                                          ("used", buggy.line("value"))}


def test_legacy_variable_rewrap(snippet):
    script = snippet(program("""
    from torch.autograd import Variable
    w = torch.randn(4, 3, requires_grad=True)
    hidden = x @ w
    hidden = Variable(hidden.data, requires_grad=True)  # <- variable
    F.cross_entropy(hidden, y).backward()
    """))
    t = script.run()
    assert [(f.kind, f.line) for f in t.findings if f.tensor == "w"] == [
        ("data_attr", script.line("variable")), ("tensor_rewrap", script.line("variable"))]
    assert isinstance(t.namespace["hidden"], t.namespace["Variable"])


def test_the_legacy_constructor_given_tensors_is_a_rewrap_not_the_scripts_float(snippet):
    """A rotation matrix built with ``torch.Tensor([[cos, -sin], [sin, cos]])`` (b26f_angle): the constructor converts
    each item with ``float()``, which the script never wrote; the cut is the constructor's, fixed with torch.stack."""
    script = snippet(program("""
    angle = nn.Parameter(torch.tensor(0.3))
    c, s = torch.cos(angle), torch.sin(angle)
    rotation = torch.Tensor([[c, -s], [s, c]])  # <- built
    try:
        (x[:, :2] @ rotation).sum().backward()
    except RuntimeError:
        pass
    """))
    found = [(f.kind, f.line) for f in script.run().findings if f.severity == "error"]
    assert found == [("tensor_rewrap", script.line("built"))], found


def test_a_grad_read_that_found_zeros_is_the_symptom_of_whichever_finding_names_the_tensor(snippet):
    """A fake-quantiser's torch.round gives the weight an all-zero gradient (b26b_qat): the finding is at the round, and
    the script's read of the zero ``.grad`` is its symptom, as for a cut's finding."""
    script = snippet(program("""
    w = nn.Parameter(torch.randn(4, 3))
    optimizer = torch.optim.SGD([w], lr=0.1)
    for step in range(2):
        optimizer.zero_grad()
        F.cross_entropy(x @ torch.round(w * 4) / 4, y).backward()  # <- round
        optimizer.step()
    print(bool((w.grad == 0).all()))  # <- read
    """))
    (finding,) = [f for f in script.run().findings if f.severity == "error"]
    assert (finding.kind, finding.line) == ("non_differentiable", script.line("round"))
    assert ("symptom", script.line("read")) in {(r.role, r.line) for r in finding.related}


def test_an_attack_input_re_made_from_its_own_values_each_step_is_no_cut(snippet):
    """PGD re-makes its input leaf from the previous one's values (`Variable(x.data + eta, requires_grad=True)`):
    the new leaf takes the gradient by design, while a computation re-made that way still is a cut (above)."""
    script = snippet(program("""
    from torch.autograd import Variable
    model = nn.Linear(4, 3)
    x_adv = Variable(x.data, requires_grad=True)
    for step in range(3):
        loss = F.cross_entropy(model(x_adv), y)
        loss.backward()
        x_adv = Variable(x_adv.data + 0.01 * x_adv.grad.sign(), requires_grad=True)
    print(F.cross_entropy(model(x_adv), y).item())
    """))
    assert problems(script.run()) == []


def test_moving_a_model_with_to_is_no_cut(snippet):
    """``model.to(device)`` runs under no_grad inside torch and writes back into the same parameters."""
    script = snippet(program("""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(4, 3)
            self.head = nn.Linear(3, 3)  # <- head
        def forward(self, x):
            return self.body(x)
    model = Net().to("cpu", torch.float32)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    F.cross_entropy(model(x), y).backward()
    optimizer.step()
    """))
    t = script.run()
    assert {(f.kind, f.tensor, f.line) for f in t.findings} == {
        ("unused_parameter", "Net.head.weight", script.line("head")),
        ("unused_parameter", "Net.head.bias", script.line("head"))}


def test_reading_one_parameters_grad_asks_for_its_whole_layer(snippet):
    """`print(model.weight.grad)` after a forward under no_grad: the bias of the same layer went through
    the same cut, so it is explained by it, not listed as a gradient nobody can explain."""
    script = snippet("""
    import torch
    from torch import nn
    model = nn.Linear(3, 1)
    with torch.no_grad():
        out = model(torch.randn(8, 3))  # <- cut
    loss = out.pow(2).mean()
    loss.requires_grad_(True)
    loss.backward()
    print(model.weight.grad)
    """)
    t = script.run()
    assert {(f.kind, f.tensor, f.line) for f in t.findings if f.severity == "error"} == {
        ("no_grad", "Linear.weight", script.line("cut")), ("no_grad", "Linear.bias", script.line("cut"))}
    assert "no finding explains" not in t.report()


def test_modules_in_a_plain_list_are_named_at_the_list_and_a_hidden_teacher_is_not(snippet):
    buggy = snippet(program("""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = [nn.Linear(4, 4), nn.Linear(4, 4)]  # <- list
            self.head = nn.Linear(4, 3)

        def forward(self, x):
            for layer in self.layers:
                x = torch.relu(layer(x))
            return self.head(x)

    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    """))
    assert [(f.kind, f.severity, f.line) for f in problems(buggy.run())] == [
        ("non_parameter_tensor", "warning", buggy.line("list"))]
    teacher = snippet(program("""
    class Student(nn.Module):
        def __init__(self, teacher):
            super().__init__()
            self.teacher = [teacher]  # kept out of parameters() on purpose
            self.body = nn.Linear(4, 3)

        def forward(self, x):
            with torch.no_grad():
                target = self.teacher[0](x).softmax(-1)
            return F.kl_div(self.body(x).log_softmax(-1), target, reduction="batchmean")

    model = Student(nn.Linear(4, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        optimizer.zero_grad()
        model(x).backward()
        optimizer.step()
    """))
    assert problems(teacher.run()) == []


def test_a_snapshot_of_a_leaf_is_no_cause_when_the_backward_without_graph_carried_its_own_cut(snippet):
    """An attack's ``before = noise.detach().clone()`` beside a loss computed under no_grad: the backward that raised
    carried the no_grad cut, which names the cause; the snapshot flowed into no loss."""
    script = snippet(program("""
    w = torch.rand(3, requires_grad=True)
    before = w.detach().clone()
    for step in range(2):
        with torch.no_grad():
            y = w * 2  # <- cut
        try:
            y.sum().backward()
        except RuntimeError:
            pass
    """))
    assert [(f.kind, f.line) for f in problems(script.run())] == [("no_grad", script.line("cut"))]


@pytest.mark.parametrize("after", ["", "torch.set_grad_enabled(True)"])
def test_gradients_a_helper_switched_off_for_good_are_named_at_its_call(snippet, after):
    """silero-models#40: a model loader calls ``torch.set_grad_enabled(False)`` (no ``with``) and never turns
    gradients back on; the head trained on top gets no graph. The call is the line to change, wherever the cut op
    runs; a ``with torch.no_grad():`` block nested in the stretch leaves it so. Turned back on, all is well."""
    script = snippet(program(f"""
    def load():
        torch.set_grad_enabled(False)  # <- off
        with torch.no_grad():
            frozen = nn.Linear(4, 3).requires_grad_(False)
        return frozen
    frozen = load()
    {after}
    head = nn.Linear(3, 3)
    opt = torch.optim.SGD(head.parameters(), lr=0.1)
    for step in range(2):
        loss = F.cross_entropy(head(frozen(x)), y)
        opt.zero_grad()
        try:
            loss.backward()
        except RuntimeError:
            pass
        opt.step()
    torch.set_grad_enabled(True)
    """))
    found = {(f.kind, f.line) for f in problems(script.run())}
    assert found == ({("no_grad", script.line("off"))} if not after else set())


@pytest.mark.parametrize("block", ["torch.set_grad_enabled(True)", "torch.enable_grad()"])
def test_a_switch_left_off_in_the_script_s_own_scope_is_named_past_a_library_s_training_block(snippet, block):
    """scvi-tools#214: a module imported for its trainer calls ``torch.set_grad_enabled(False)`` at its top, and trains
    its own model inside ``with torch.set_grad_enabled(True):``; the user's head trained afterwards, at the same (module)
    level, gets no graph. The switch is the line to change: the block's end left gradients off as the switch had, and
    nothing turned them back on (a later call that does brackets the line, which is then the one to move:
    `test_fix_fits_line.test_set_grad_enabled_false_before_the_line_is_named`)."""
    script = snippet(program(f"""
    torch.set_grad_enabled(False)  # <- off
    def fit(model):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        with {block}:
            loss = model(x).pow(2).mean()
            if loss.requires_grad:
                opt.zero_grad()
                loss.backward()
                opt.step()
    fit(nn.Linear(4, 3))
    head = nn.Linear(4, 3)
    loss = F.cross_entropy(head(x), y)
    try:
        loss.backward()
    except RuntimeError:
        pass
    """))
    try:
        found = {(f.kind, f.line) for f in problems(script.run())}
    finally:
        torch.set_grad_enabled(True)
    assert found == {("no_grad", script.line("off"))}


def test_a_leaf_made_under_a_caller_s_no_grad_is_watched_and_that_block_named(snippet):
    """SONIC in ComfyUI (b32c_sonic_noise_optimisation_under_host_no_grad): a host runs the script's function under
    `torch.no_grad()`, and the noise it optimises, made there with requires_grad=True, still requires grad; every op
    on it records nothing, and the backward fails. Named at the host's call inside the block, not at the model the
    script froze on purpose."""
    script = snippet("""
import torch
from torch import nn

def fit(model, target):
    noise = torch.randn(1, 4, requires_grad=True)
    opt = torch.optim.Adam([noise], lr=0.1)
    for _ in range(2):
        loss = ((model(noise) - target) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

model = nn.Linear(4, 4).requires_grad_(False)
try:
    with torch.no_grad():
        fit(model, torch.ones(1, 4))  # <- call
except RuntimeError as error:
    print(error)
""")
    found = [(f.kind, f.line) for f in script.run().findings if f.severity == "error"]
    assert found == [("no_grad", script.line("call"))], found
