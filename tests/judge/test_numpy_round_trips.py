"""Values that leave for NumPy, go through NumPy's own arithmetic or indexing (which carries no taint) and come back
through ``torch.tensor``/``from_numpy`` as a term of the loss: the term is tied to the ``.numpy()`` that made the
array in the function that rebuilds it (or one it called), since the last backward. Round trips whose result is
a target, a mask or an index of a term that has a gradient of its own stay silent."""
from __future__ import annotations

import textwrap

PRELUDE = """
import numpy as np
import torch
from torch import nn
import torch.nn.functional as F
torch.manual_seed(0)
x, y = torch.randn(8, 4), torch.randn(8, 3)
model = nn.Linear(4, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
"""


def run(snippet, code: str):
    script = snippet(PRELUDE + textwrap.dedent(code))
    return script, script.run().findings


def loud(found):
    return [(f.kind, f.severity, f.line) for f in found if f.severity in ("error", "warning")]


def test_a_term_computed_in_numpy_from_the_output_is_named_at_its_numpy_call(snippet):
    script, found = run(snippet, """
    def colour_loss(out, target):
        values = []
        for row in range(len(out)):
            mine = out[row].detach().numpy()  # <- cut
            values.append(np.sqrt(((mine - target[row].numpy()) ** 2).sum()))
        return torch.mean(torch.tensor(values, requires_grad=True))  # <- rebuilt

    for step in range(2):
        out = model(x)
        loss = F.mse_loss(out, y) + colour_loss(out, y)  # <- added
        opt.zero_grad()
        loss.backward()
        opt.step()
    """)
    terms = [f for f in found if f.kind == "cut_term"]
    assert {f.tensor for f in terms} == {"Linear.weight", "Linear.bias"}
    assert {f.line for f in terms} >= {script.line("cut")}
    assert all({(p.role, p.line) for p in f.related} == {("symptom", script.line("added"))} for f in terms)


def test_rows_picked_by_numpy_indexing_and_rebuilt_with_from_numpy_are_named(snippet):
    script, found = run(snippet, """
    for step in range(2):
        out = model(x)
        hard = np.where(out.detach().numpy().sum(1) > 0)[0]
        picked = torch.from_numpy(out.data.numpy()[hard])  # <- cut
        loss = F.mse_loss(out, y) + picked.pow(2).mean()  # <- added
        opt.zero_grad()
        loss.backward()
        opt.step()
    """)
    assert ("cut_term", "warning", script.line("cut")) in loud(found)


def test_targets_made_in_numpy_from_the_output_stay_silent(snippet):
    _, found = run(snippet, """
    for step in range(3):
        out = model(x)
        pseudo = torch.from_numpy(np.argmax(out.detach().numpy(), 1))
        weights = torch.tensor(np.exp(-out.detach().numpy().max(1)))
        loss = (F.cross_entropy(out, pseudo, reduction="none") * weights).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    """)
    assert loud(found) == []


def test_metrics_in_numpy_and_batches_from_numpy_stay_silent(snippet):
    _, found = run(snippet, """
    batches = [(np.random.rand(8, 4).astype("float32"), np.random.rand(8, 3).astype("float32")) for _ in range(3)]
    errors = []
    for inputs, targets in batches:
        xb, yb = torch.from_numpy(inputs), torch.from_numpy(targets)
        out = model(xb)
        loss = F.mse_loss(out, yb) + 0.01 * torch.tensor(np.float32(1.0))
        errors.append(np.abs(out.detach().numpy() - targets).mean())
        opt.zero_grad()
        loss.backward()
        opt.step()
        scale = torch.tensor(np.mean(errors))
    """)
    assert loud(found) == []


def test_a_constant_built_from_numpy_in_another_function_is_not_tied_to_the_output(snippet):
    _, found = run(snippet, """
    def logged(out):
        return float(np.abs(out.detach().numpy()).mean())

    def prior():
        return torch.tensor(np.float32(0.5))

    for step in range(2):
        out = model(x)
        logged(out)
        loss = F.mse_loss(out, y) + prior()
        opt.zero_grad()
        loss.backward()
        opt.step()
    """)
    assert loud(found) == []


def test_a_numpy_number_added_to_the_loss_is_named_at_its_numpy_call(snippet):
    script, found = run(snippet, """
    def spread(embedding):
        embedding = embedding / np.linalg.norm(embedding, axis=1, keepdims=True)
        return (embedding @ embedding.T).mean()

    for step in range(2):
        out = model(x)
        contrastive = spread(out.detach().numpy())  # <- cut
        loss = 0.5 * contrastive + F.mse_loss(out, y)  # <- added
        opt.zero_grad()
        loss.backward()
        opt.step()
    """)
    terms = [f for f in found if f.kind == "cut_term"]
    assert {(f.tensor, f.line) for f in terms} == {("Linear.weight", script.line("cut")), ("Linear.bias", script.line("cut"))}
    assert all({(p.role, p.line) for p in f.related} == {("symptom", script.line("added"))} for f in terms)


def test_a_numpy_weight_on_a_loss_with_a_gradient_stays_silent(snippet):
    _, found = run(snippet, """
    weights = np.linspace(0.5, 1.0, 2)
    for step in range(2):
        out = model(x)
        worst = np.abs(out.detach().numpy()).max()
        loss = weights[step] * F.mse_loss(out, y) + F.l1_loss(out, y) * np.float64(0.1)
        opt.zero_grad()
        loss.backward()
        opt.step()
    """)
    assert loud(found) == []


def test_numbers_given_to_the_legacy_tensor_constructor_are_named_at_their_cut(snippet):
    script, found = run(snippet, """
    for step in range(2):
        out = model(x)
        per_row = torch.Tensor([(o - t).norm().item() for o, t in zip(out, y)])  # <- cut
        loss = F.mse_loss(out, y) + per_row.mean()  # <- added
        opt.zero_grad()
        loss.backward()
        opt.step()
    """)
    assert {(f.kind, f.line, f.tensor) for f in found if f.severity == "warning"} == {
        ("cut_term", script.line("cut"), "Linear.weight"), ("cut_term", script.line("cut"), "Linear.bias")}


def test_the_legacy_constructor_and_tensor_subclasses_build_as_untraced(snippet):
    script = snippet(PRELUDE + textwrap.dedent("""
    class Tagged(torch.Tensor):
        pass

    shaped, filled, tagged = torch.Tensor(2, 3), torch.Tensor([[1.0, 2.0]]), Tagged([1.0])
    assert shaped.shape == (2, 3) and filled.tolist() == [[1.0, 2.0]]
    assert type(tagged) is Tagged and tagged.tolist() == [1.0]
    loss = F.mse_loss(model(x), y)
    loss.backward()
    """))
    result = script.run()
    assert loud(result.findings) == []
