"""A tensor without grad that a module holds as a plain attribute and the script treats as learnable (reads its
``.grad``) is named where the module got it. Looking for its holder walks every module, so a tensor found held by
none is remembered as such until a module could have taken it: an attribute set, a buffer registered, a module
first seen. Those must still tell, however often the tensor was read before."""
from __future__ import annotations

import pytest

CODE = """
import torch
from torch import nn
torch.manual_seed(0)
keys = torch.randn(8, 4)
model = nn.Linear(4, 4)
for step in range(3):
    print(keys.grad)  # read while no module holds it
{hold}
print(model.keys.grad)  # <- symptom
for step in range(2):
    out = torch.softmax(model(torch.randn(2, 4)) @ model.keys.t(), dim=-1)
    out.pow(2).sum().backward()
"""

HOLDS = {
    "plain": "model.keys = keys  # <- non_parameter_tensor",
    "plain buffer": "model.register_buffer('keys', keys)  # <- non_parameter_tensor",
}


@pytest.mark.parametrize("problem", HOLDS)
def test_a_tensor_read_before_a_module_held_it_is_named_where_the_module_took_it(snippet, problem):
    script = snippet(CODE.format(hold=HOLDS[problem]))
    found = [(f.kind, f.line) for f in script.run().findings if f.kind == "non_parameter_tensor"]
    assert found == [("non_parameter_tensor", script.line("non_parameter_tensor"))]


def test_a_gradient_log_over_a_frozen_backbone_is_silent(snippet):
    """Fine-tuning a head over a frozen backbone, logging the gradient of every parameter that has one."""
    run = snippet("""
        import torch
        from torch import nn
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 1))
        for p in model[0].parameters():
            p.requires_grad_(False)
        opt = torch.optim.SGD(model[1].parameters(), lr=0.1)
        x, y = torch.randn(8, 4), torch.randn(8, 1)
        for step in range(3):
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            norms = [p.grad.norm() for p in model.parameters() if p.grad is not None]
    """).run()
    assert run.findings == []
