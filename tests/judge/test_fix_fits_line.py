"""Each finding's message and fix fit the line they are printed at: the fix is something to do at that
line, worded for what the line does, and never advice for another shape of code.

One small script per shape; each test asserts what the text must say for that shape and what it must not.
"""
from __future__ import annotations

import textwrap

import pytest

PRELUDE = """
import torch
from torch import nn
import torch.nn.functional as F
torch.manual_seed(0)
x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
"""


def run(snippet, code: str, raises: str | None = None):
    script = snippet(PRELUDE + textwrap.dedent(code))
    if raises is None:
        return script, script.run()
    with pytest.raises(RuntimeError, match=raises):
        script.run()
    return script, None


def only(findings, kind: str, line: int):
    found = [f for f in findings if f.kind == kind and f.line == line]
    assert found, [(f.kind, f.line) for f in findings]
    return found[0]


def roles(finding) -> dict[str, int]:
    return {place.role: place.line for place in finding.related}


# ---- no_grad -------------------------------------------------------------------------------------

def test_no_grad_forward_names_the_with_block_and_gives_no_update_advice(snippet):
    script, t = run(snippet, """
    model = nn.Linear(4, 3)
    with torch.no_grad():  # <- off
        logits = model(x)  # <- no_grad
    loss = F.cross_entropy(logits, y)
    loss.requires_grad_(True)
    loss.backward()
    print(model.weight.grad)
    """)
    finding = only(t.findings, "no_grad", script.line("no_grad"))
    assert roles(finding)["disabled"] == script.line("off")
    assert f"with torch.no_grad():` at {script.path.name}:{script.line('off')}" in finding.message
    assert "out of the `with torch.no_grad():` block" in finding.fix
    assert "w -=" not in finding.fix and "w.grad" not in finding.fix


def test_no_grad_on_a_parameter_shaped_result_that_is_no_update_gets_no_update_advice(snippet):
    script, t = run(snippet, """
    alpha = torch.zeros(3, requires_grad=True)
    with torch.no_grad():
        weights = torch.softmax(alpha, 0)  # <- no_grad
    loss = F.cross_entropy(x[:, :3] * weights, y)
    loss.requires_grad_(True)
    loss.backward()
    print(alpha.grad)
    """)
    finding = only(t.findings, "no_grad", script.line("no_grad"))
    assert "w -=" not in finding.fix and "in place" not in finding.fix


def test_no_grad_update_that_rebinds_the_leaf_is_told_to_update_in_place(snippet):
    script, t = run(snippet, """
    w = torch.randn(4, 3, requires_grad=True)
    loss = F.cross_entropy(x @ w, y)
    loss.backward()
    with torch.no_grad():
        w = w - 0.1 * w.grad  # <- no_grad
    loss = F.cross_entropy(x @ w, y) + F.cross_entropy(x @ torch.ones(4, 3, requires_grad=True), y)
    loss.backward()
    print(w.grad)
    """)
    finding = only(t.findings, "no_grad", script.line("no_grad"))
    assert finding.severity == "error"
    assert "`w -= lr * w.grad`" in finding.fix
    assert "out of the" not in finding.fix


def test_no_grad_decorator_on_the_function_is_named(snippet):
    script, t = run(snippet, """
    model = nn.Linear(4, 3)

    @torch.no_grad()  # <- off
    def predict(inputs):
        return model(inputs)  # <- no_grad

    loss = F.cross_entropy(predict(x), y)
    loss.requires_grad_(True)
    loss.backward()
    print(model.weight.grad)
    """)
    finding = only(t.findings, "no_grad", script.line("no_grad"))
    assert roles(finding)["disabled"] == script.line("off")
    assert "remove `@torch.no_grad()`" in finding.fix


def test_no_grad_block_in_a_caller_puts_the_finding_on_the_call_it_made(snippet):
    """The run saw which line called the function while gradients were off: that call is the line to change."""
    script, t = run(snippet, """
    model = nn.Linear(4, 3)

    def predict(inputs):
        return model(inputs)  # <- inner

    with torch.no_grad():  # <- off
        out = predict(x)  # <- call
    loss = F.cross_entropy(out, y)
    loss.requires_grad_(True)
    loss.backward()
    print(model.weight.grad)
    """)
    finding = only(t.findings, "no_grad", script.line("call"))
    assert {role: line for role, line in roles(finding).items() if role != "symptom"} == {
        "disabled": script.line("off"), "used": script.line("inner")}
    assert f"call it outside the `with torch.no_grad():` block (line {script.line('off')})" in finding.fix


def test_a_no_grad_decorator_of_the_function_itself_keeps_the_finding_inside(snippet):
    script, t = run(snippet, """
    model = nn.Linear(4, 3)

    @torch.no_grad()  # <- off
    def predict(inputs):
        return model(inputs)  # <- no_grad

    out = predict(x)
    loss = F.cross_entropy(out, y)
    loss.requires_grad_(True)
    loss.backward()
    print(model.weight.grad)
    """)
    finding = only(t.findings, "no_grad", script.line("no_grad"))
    assert roles(finding)["disabled"] == script.line("off")


def test_a_decorated_caller_handed_the_tensor_to_learn_is_named_at_the_call_into_it(snippet):
    """A function under ``@torch.no_grad()`` that was handed a tensor requiring grad (a rendering pipeline given
    the latents to optimise, b11_ronan_latent_noise_through_no_grad_pipeline) cuts it at the call into it; one that
    reaches the weights itself, through a callback (b8_lightning_custom_optimizer_closure_no_grad), is named at its
    own line that ran the computation."""
    script, t = run(snippet, """
    decoder = nn.Linear(4, 3).requires_grad_(False)

    def denoise(code):
        return decoder(code)  # <- inner

    @torch.no_grad()  # <- off
    def render(code):
        return denoise(code)

    code = torch.zeros(8, 4, requires_grad=True)
    out = render(code)  # <- call
    loss = F.cross_entropy(out, y)
    loss.requires_grad_(True)
    loss.backward()
    print(code.grad)
    """)
    finding = only(t.findings, "no_grad", script.line("call"))
    assert {role: line for role, line in roles(finding).items() if role != "symptom"} == {
        "disabled": script.line("off"), "used": script.line("inner")}
    assert "remove `@torch.no_grad()` (line" in finding.fix
    script, t = run(snippet, """
    model = nn.Linear(4, 3)

    def compute():
        return model(x)

    @torch.no_grad()  # <- off
    def evaluate(fn):
        return fn()  # <- call

    loss = F.cross_entropy(evaluate(compute), y)
    loss.requires_grad_(True)
    loss.backward()
    print(model.weight.grad)
    """)
    finding = only(t.findings, "no_grad", script.line("call"))
    assert roles(finding)["disabled"] == script.line("off")
    assert "torch.enable_grad()" in finding.fix


def test_a_decorated_function_handed_the_tensor_to_learn_is_named_at_the_call_even_where_it_computes(snippet):
    """The rule above holds for the cut's own function too: a ``@torch.no_grad()`` helper that computes directly on
    the log-probs it was handed (b14_skyrl_kl_loss_helper_decorated_no_grad) is named at the call; one handed nothing
    that requires grad (a frozen tower run on plain inputs, b13_bunny_vision_tower_forward_no_grad) at its own line."""
    script, t = run(snippet, """
    model = nn.Linear(4, 3)

    @torch.no_grad()  # <- off
    def scaled(logits):
        return logits * 2  # <- inner

    loss = F.cross_entropy(scaled(model(x)), y)  # <- call
    loss.requires_grad_(True)
    loss.backward()
    print(model.weight.grad)
    """)
    finding = only(t.findings, "no_grad", script.line("call"))
    assert {role: line for role, line in roles(finding).items() if role != "symptom"} == {
        "disabled": script.line("off"), "used": script.line("inner")}
    script, t = run(snippet, """
    model = nn.Linear(4, 3)

    @torch.no_grad()  # <- off
    def features(inputs):
        return model(inputs)  # <- inner

    loss = F.cross_entropy(features(x), y)
    loss.requires_grad_(True)
    loss.backward()
    print(model.weight.grad)
    """)
    finding = only(t.findings, "no_grad", script.line("inner"))
    assert roles(finding)["disabled"] == script.line("off")


def test_set_grad_enabled_false_before_the_line_is_named(snippet):
    script, t = run(snippet, """
    model = nn.Linear(4, 3)
    torch.set_grad_enabled(False)  # <- off
    logits = model(x)  # <- no_grad
    torch.set_grad_enabled(True)
    loss = F.cross_entropy(logits, y)
    loss.requires_grad_(True)
    loss.backward()
    print(model.weight.grad)
    """)
    finding = only(t.findings, "no_grad", script.line("no_grad"))
    assert roles(finding)["disabled"] == script.line("off")
    assert "torch.set_grad_enabled(True)" in finding.fix


# ---- tensor_rewrap -------------------------------------------------------------------------------

@pytest.mark.parametrize("requires_grad", [False, True])
def test_rewrap_of_an_item_number(snippet, requires_grad):
    script, t = run(snippet, f"""
    model = nn.Linear(4, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    value = F.cross_entropy(model(x), y).item()  # <- item
    loss = torch.tensor(value{', requires_grad=True' if requires_grad else ''})  # <- rewrap
    (loss + torch.zeros((), requires_grad=True)).backward()
    opt.step()
    """)
    finding = only(t.findings, "tensor_rewrap", script.line("rewrap"))
    assert ("requires_grad=True on it starts a new leaf" in finding.message) is requires_grad
    assert "torch.stack" not in finding.fix
    assert "use the tensor the number came from" in finding.fix
    assert f".item() at {script.path.name}:{script.line('item')}" in finding.fix


def test_rewrap_of_a_list_of_tensors_is_told_to_stack(snippet):
    script, t = run(snippet, """
    a = torch.ones((), requires_grad=True)
    b = torch.ones((), requires_grad=True)
    loss = torch.tensor([a * 2, b * 3], requires_grad=True).sum()  # <- rewrap
    loss.backward()
    print(a.grad)
    """)
    finding = only(t.findings, "tensor_rewrap", script.line("rewrap"))
    assert "torch.stack" in finding.fix
    assert ".item()" not in finding.fix


def test_rewrap_of_a_numpy_array_points_at_the_conversion(snippet):
    script, t = run(snippet, """
    alpha = torch.zeros(3, requires_grad=True)
    model = nn.Linear(4, 3)
    weights = torch.softmax(alpha, 0).detach().numpy()  # <- numpy
    loss = F.cross_entropy(model(x) * torch.from_numpy(weights), y)  # <- rewrap
    loss.backward()
    """)
    finding = only(t.findings, "tensor_rewrap", script.line("rewrap"))
    assert f".detach().numpy() at {script.path.name}:{script.line('numpy')}" in finding.fix
    assert "torch.stack" not in finding.fix and "requires_grad=True" not in finding.message


# ---- non_differentiable --------------------------------------------------------------------------

@pytest.mark.parametrize("line, fits, misfits", [
    ("h = torch.round(x @ w * 4) / 4", "straight-through", "softmax"),
    ("h = (x @ w).argmax(dim=1).float()[:, None]", "softmax", "straight-through"),
    ("h = (x @ w > 0).float()", "comparison a > b with a soft mask", "softmax"),
])
def test_non_differentiable_fix_fits_the_op(snippet, line, fits, misfits):
    script, t = run(snippet, f"""
    w = torch.randn(4, 3, requires_grad=True)
    {line}  # <- cut
    loss = (h * torch.ones(8, 3, requires_grad=True)).sum()
    loss.backward()
    print(w.grad)
    """)
    finding = only(t.findings, "non_differentiable", script.line("cut"))
    assert fits in finding.fix
    assert misfits not in finding.fix


# ---- non_leaf_watched ----------------------------------------------------------------------------

def test_non_leaf_made_by_a_dtype_move_gets_device_advice(snippet):
    script, t = run(snippet, """
    w = torch.randn(4, 3, dtype=torch.float64, requires_grad=True).float()  # <- made
    F.cross_entropy(x @ w, y).backward()
    print(w.grad)
    """)
    finding = only(t.findings, "non_leaf_watched", script.line("made"))
    assert "device" in finding.fix and "dtype" in finding.fix


def test_non_leaf_made_by_computation_is_told_to_keep_the_leaf_name(snippet):
    script, t = run(snippet, """
    w = torch.randn(4, 3, requires_grad=True)
    w = F.normalize(w, dim=1)  # <- made
    F.cross_entropy(x @ w, y).backward()
    print(w.grad)
    """)
    finding = only(t.findings, "non_leaf_watched", script.line("made"))
    assert "device" not in finding.fix
    assert "instead of rebinding `w`" in finding.fix and ".retain_grad()" in finding.fix


# ---- unused_parameter ----------------------------------------------------------------------------

def test_unused_layer_is_told_to_be_called_and_an_ignored_parameter_to_be_used(snippet):
    script, t = run(snippet, """
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(4, 3)
            self.head = nn.Linear(3, 3)  # <- layer
            self.gate = nn.Parameter(torch.zeros(3))  # <- param
        def forward(self, x):
            return self.body(x)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    F.cross_entropy(model(x), y).backward()
    optimizer.step()
    """)
    layer = only(t.findings, "unused_parameter", script.line("layer"))
    param = only(t.findings, "unused_parameter", script.line("param"))
    assert "call this Linear (`head`) in the model's forward" in layer.fix
    assert "use it in Net.forward" in param.fix and "call this" not in param.fix


# ---- optimizer -----------------------------------------------------------------------------------

def test_parameter_made_after_the_optimizer(snippet):
    script, t = run(snippet, """
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(4, 8)
        def forward(self, x):
            return self.head(self.body(x))
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)  # <- opt
    model.head = nn.Linear(8, 3)
    F.cross_entropy(model(x), y).backward()
    opt.step()
    """)
    finding = only(t.findings, "optimizer", script.line("opt"))
    assert "made after the SGD" in finding.message
    assert "build the SGD after the model is complete" in finding.fix


def test_parameter_left_out_of_the_optimizer_list(snippet):
    script, t = run(snippet, """
    model = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 3))
    opt = torch.optim.Adam(model[0].parameters(), lr=0.1)  # <- opt
    F.cross_entropy(model(x), y).backward()
    opt.step()
    """)
    finding = only(t.findings, "optimizer", script.line("opt"))
    assert "already existed" in finding.message
    assert "all parameters (model.parameters())" in finding.fix
    assert "after the model is complete" not in finding.fix


# ---- inplace_saved -------------------------------------------------------------------------------

@pytest.mark.parametrize("line, fits, misfits", [
    ("h += 1", "x = x + y", "x.clone() before"),
    ("h[:, :2] = 0", "x = x.clone() before", "x += y"),
])
def test_inplace_fix_fits_the_write(snippet, line, fits, misfits):
    script, t = run(snippet, f"""
    w = torch.randn(4, 3, requires_grad=True)
    h = torch.sigmoid(x @ w)
    {line}  # <- write
    try:
        h.sum().backward()
    except RuntimeError:
        pass
    """)
    finding = only([f for f in t.findings if f.severity == "error"], "inplace_saved", script.line("write"))
    assert fits in finding.fix
    assert misfits not in finding.fix
