"""``nn.Parameter(encoder.weight.t())``, meant to tie a decoder's weight to an encoder's, makes a second leaf over the
encoder weight's memory: the decoder's gradients never reach the encoder weight, and each learns only from its own
uses. An error at the wrap when both train. A tied weight used through the parameter itself, a new parameter
initialised from a copy, or a view of a layer that no longer trains, is silent."""
from __future__ import annotations

import pytest

CODE = """
import torch
from torch import nn
import torch.nn.functional as F

torch.manual_seed(0)


class AutoEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(8, 3, bias=False)
        self.decoder = nn.Linear(3, 8, bias=False)
        {tie}  # <- tie

    def forward(self, x):
        h = torch.sigmoid(self.encoder(x))
        return {decode}


model = AutoEncoder()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(16, 8)
for step in range(3):
    loss = ((model(x) - x) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""
DECODER = "self.decoder(h)"


def errors(snippet, tie: str, decode: str = DECODER):
    script = snippet(CODE.format(tie=tie, decode=decode))
    return script, [f for f in script.run().findings if f.severity in ("error", "warning")]


def test_a_parameter_wrapped_around_a_view_of_a_trained_one_is_named_at_the_wrap(snippet):
    script, found = errors(snippet, "self.decoder.weight = nn.Parameter(self.encoder.weight.t())")
    assert [(f.kind, f.severity, f.line) for f in found] == [("new_parameter", "error", script.line("tie"))]
    assert "shares its memory but is a second leaf" in found[0].message


@pytest.mark.parametrize("tie, decode", [
    ("self.decoder = None", "F.linear(h, self.encoder.weight.t())"),
    ("self.decoder.weight = nn.Parameter(self.encoder.weight.t().clone())", DECODER),
    ("self.decoder.weight = nn.Parameter(nn.Linear(8, 3, bias=False).weight.t())", DECODER),
], ids=["the parameter itself", "a copy", "a view of a layer that does not train"])
def test_a_tied_weight_used_as_itself_a_copy_or_a_view_of_an_untrained_layer_is_silent(snippet, tie, decode):
    assert errors(snippet, tie, decode)[1] == []
