"""Weights kept as plain tensors in a list (or dict) attribute of a module, as ports of Keras layers build them in a
``build()`` with an initialiser helper: they need no gradient, so the script's ``.grad`` read finds None. The
`non_parameter_tensor` error is named at the line of the module's own code that made each weight (not inside the
helper), with the read as its symptom; the same weights held as Parameters in a ParameterList are silent."""
from __future__ import annotations

CODE = """
import torch
from torch import nn

torch.manual_seed(0)


def glorot(shape):
    return nn.init.xavier_uniform_(torch.empty(*shape))


class Gather(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.build(sizes)

    def build(self, sizes):
        self.weights = {container}
        for index, (n_in, n_out) in enumerate(zip(sizes, sizes[1:])):
            weight = {weight}  # <- made
            {add}

    def forward(self, x):
        for weight in {items}:
            x = torch.relu(x @ weight)
        return x


model = nn.Sequential(nn.Linear(4, 6), Gather([6, 5, 3]))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(3):
    opt.zero_grad()
    model(torch.randn(8, 4)).pow(2).mean().backward()
    opt.step()
print(model[1].weights[{first}].grad)  # <- read
"""

LIST = dict(container="[]", add="self.weights.append(weight)", items="self.weights", first="0")
DICT = dict(container="{}", add="self.weights[f'w{index}'] = weight", items="self.weights.values()", first="'w0'")


def errors(snippet, weight: str, layout: dict):
    script = snippet(CODE.format(weight=weight, **layout))
    return script, [f for f in script.run().findings if f.severity in ("error", "warning")]


def test_a_plain_tensor_in_a_list_is_named_where_the_module_made_it(snippet):
    script, found = errors(snippet, "glorot((n_in, n_out))", LIST)
    assert [(f.kind, f.line) for f in found] == [("non_parameter_tensor", script.line("made"))]
    assert "Gather.weights is a plain list of tensors" in found[0].message
    assert "nn.ParameterList" in found[0].fix
    assert any(r.role == "symptom" and r.line == script.line("read") for r in found[0].related)


def test_a_plain_tensor_in_a_dict_asks_for_a_parameter_dict(snippet):
    script, found = errors(snippet, "glorot((n_in, n_out))", DICT)
    assert [(f.kind, f.line) for f in found] == [("non_parameter_tensor", script.line("made"))]
    assert "plain dict" in found[0].message and "nn.ParameterDict" in found[0].fix


def test_parameters_in_a_parameter_list_are_silent(snippet):
    layout = dict(LIST, container="nn.ParameterList()")
    assert errors(snippet, "nn.Parameter(glorot((n_in, n_out)))", layout)[1] == []
