"""Item 2 of "Nothing lost, nothing changed": a torch.compile'd model computes, traced, bit for bit what it
computes untraced, and a cut inside the compiled forward is shown at its own line (backend "eager": the
graph's operations run in Python, where the tracer sees them)."""
import os
import subprocess
import sys

import pytest
import torch
from torch import nn

from gradcheck_l2c import trace


class Detached(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 1)

    def forward(self, x):
        hidden = self.a(x).relu()
        hidden = hidden.detach()  # the cut
        return self.b(hidden)


FORWARD = Detached.forward.__code__.co_firstlineno  # where a compiled frame's line used to land
CUT_LINE = FORWARD + 2


def train(steps=12):
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = Detached()
    compiled = torch.compile(model, backend="eager")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for step in range(steps):
        x = torch.randn(16, 8) * (1 + step)  # new values each step, same shapes
        loss = compiled(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.detach().clone())
    return torch.stack(losses), [p.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize("record_sites", [False, True], ids=["report", "render"])
def test_a_compiled_model_computes_bitwise_the_same_traced_and_its_cut_is_at_its_own_line(record_sites):
    losses, weights = train()
    with trace(record_sites=record_sites) as t:
        traced_losses, traced_weights = train()
    assert torch.equal(losses, traced_losses)
    assert all(torch.equal(a, b) for a, b in zip(weights, traced_weights))
    in_forward = {(f.kind, f.line) for f in t.findings if f.file == __file__ and FORWARD <= f.line <= CUT_LINE + 1}
    assert in_forward == {("detach", CUT_LINE)}  # the snapshots train() takes are detaches of its own


def train_hooked(steps=4):
    """A compiled layer with a full backward hook: torch calls ``BackwardHookFunction.apply`` from the compiled call,
    after a graph break, in a frame dynamo compiles."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.GELU(), nn.Linear(8, 1))
    seen = []
    model[1].register_full_backward_hook(lambda module, grad_input, grad_output: seen.append(grad_output[0].sum()))
    model[1].compile(backend="eager")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        optimizer.zero_grad()
        model(torch.randn(16, 8)).pow(2).mean().backward()
        optimizer.step()
    return torch.stack(seen), [p.detach().clone() for p in model.parameters()]


def test_a_compiled_layer_with_a_backward_hook_runs_traced_as_untraced():
    """The tracer's stand-in for ``autograd.Function.apply`` is kept out of dynamo's reach (it failed to compile
    it: an InternalTorchDynamoError the untraced run never raised)."""
    hooked, weights = train_hooked()
    with trace():
        traced_hooked, traced_weights = train_hooked()
    assert torch.equal(hooked, traced_hooked) and len(hooked) == 4
    assert all(torch.equal(a, b) for a, b in zip(weights, traced_weights))


HOOKED_SCRIPT = """
import sys, torch
from torch import nn
assert "torch._dynamo" not in sys.modules  # the trace began before dynamo was loaded
model = nn.Sequential(nn.Linear(8, 8), nn.GELU(), nn.Linear(8, 1))
model[1].register_full_backward_hook(lambda module, grad_input, grad_output: print("hook"))
model[1].compile(backend="eager")
for _ in range(3):
    model(torch.randn(16, 8)).pow(2).mean().backward()
"""


def test_a_backward_hook_on_a_layer_compiled_in_the_traced_script_runs(tmp_path):
    """The same when the script's own ``compile()`` loads dynamo, after the trace began."""
    (tmp_path / "train.py").write_text(HOOKED_SCRIPT)
    env = {name: value for name, value in os.environ.items() if name != "GRADCHECK_L2C_DISABLED"}
    result = subprocess.run([sys.executable, "-m", "gradcheck_l2c", "trace", "train.py"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=300)
    assert (result.returncode, result.stdout) == (0, "hook\n" * 3), result.stderr
