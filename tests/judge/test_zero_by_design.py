"""A parameter whose gradient the mathematics makes zero or absent is no bug (issue 21, point 4): a WGAN
critic's bias under a difference of means, the last bias of a network trained only through its derivative.
The bug beside each shape (a gradient cleared before the step, a layer left out of the forward) is still
found at its own line."""
from __future__ import annotations

import textwrap

PRELUDE = """
import torch
from torch import nn
import torch.nn.functional as F
torch.manual_seed(0)
"""


def run(snippet, code: str):
    script = snippet(PRELUDE + textwrap.dedent(code))
    return script, script.run()


def loud(traced):
    return [(f.kind, f.line, f.tensor) for f in traced.findings if f.severity in ("error", "warning")]


CRITIC = """
critic, maker = nn.Linear(3, 1), nn.Linear(2, 3)
opt_c = torch.optim.SGD(critic.parameters(), lr=0.1)
opt_m = torch.optim.SGD(maker.parameters(), lr=0.1)
real, noise = torch.randn(6, 3), torch.randn(6, 2)
for step in range(4):
    opt_c.zero_grad()
    # a difference of two means over equal batches: the critic's bias gets exactly 0 from its own loss
    (critic(maker(noise).detach()).mean() - critic(real).mean()).backward()
    {clear}
    opt_c.step()  # <- step
    opt_m.zero_grad()
    (-critic(maker(noise)).mean()).backward()  # gives the critic's bias -1, cleared by opt_c.zero_grad()
    opt_m.step()
"""


def test_a_bias_its_own_loss_gives_exact_zeros_is_no_missing_update(snippet):
    _, traced = run(snippet, CRITIC.format(clear=""))
    assert loud(traced) == []


def test_a_gradient_masked_between_the_critics_backward_and_step_is_still_found(snippet):
    script, traced = run(snippet, CRITIC.format(clear="[p.grad.mul_(0) for p in critic.parameters()]  # <- mask"))
    # the weight's gradient was masked; the bias's was zero out of backward, so no step could move it
    assert loud(traced) == [("no_update", script.line("mask"), "critic.weight")]  # named at the write
    assert ("used", script.line("step")) in {(p.role, p.line) for p in traced.findings[0].related}


DERIVATIVE = """
class Potential(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden, self.out = nn.Linear(2, 16), nn.Linear(16, 1)
        self.extra = nn.Linear(16, 1)  # <- extra

    def forward(self, x):
        return self.out(torch.tanh(self.hidden(x)))

field = Potential()
opt = torch.optim.Adam(field.parameters(), lr=1e-2)
points, force = torch.randn(32, 2, requires_grad=True), torch.randn(32, 2)
for step in range(3):
    energy = field(points)
    # the loss reads only dE/dx: the last layer's bias vanishes from it, so it rightly gets no gradient
    (grad_e,) = torch.autograd.grad(energy.sum(), points, create_graph=True)
    loss = F.mse_loss(-grad_e, force)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_a_bias_a_derivative_drops_is_neither_unused_nor_non_differentiable(snippet):
    script, traced = run(snippet, DERIVATIVE.replace("        self.extra = nn.Linear(16, 1)  # <- extra\n", ""))
    assert loud(traced) == []
    # no backward involved the bias (it got no gradient), and nothing says it was cut from the loss
    assert {w.name: w.got_grad for w in traced.watched}["Potential.out.bias"] is None


def test_a_layer_left_out_of_a_derivative_models_forward_is_still_unused(snippet):
    script, traced = run(snippet, DERIVATIVE)
    assert loud(traced) == [("unused_parameter", script.line("extra"), t)
                            for t in ("Potential.extra.weight", "Potential.extra.bias")]


def test_a_model_dropped_before_training_began_is_not_unused(snippet):
    script, traced = run(snippet, """
    class Small(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 1)

        def forward(self, x):
            return self.fc(x)

    class Big(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(3, 4), nn.Linear(4, 1)

        def forward(self, x):
            return self.fc2(torch.relu(self.fc1(x)))

    data, target = torch.randn(16, 3), torch.randn(16, 1)
    model = Small()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model = Big()  # a bigger one, and its own optimizer
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    kept = nn.Conv1d(3, 1, 1)  # <- kept
    opt.add_param_group({"params": kept.parameters()})
    for step in range(2):
        opt.zero_grad()
        F.mse_loss(model(data), target).backward()
        opt.step()
    """)
    # the first model is gone; the one the script still holds and never used is still told
    assert loud(traced) == [("unused_parameter", script.line("kept"), t) for t in ("Conv1d.weight", "Conv1d.bias")]


def test_the_last_leaf_a_refinement_loop_remakes_is_not_unused(snippet):
    script, traced = run(snippet, """
    model = nn.Linear(3, 3).requires_grad_(False)
    stray = torch.zeros(3, requires_grad=True)  # <- stray
    for target in torch.randn(2, 5, 3):
        guess = torch.zeros(5, 3, requires_grad=True)
        for step in range(4):
            (grad,) = torch.autograd.grad(F.mse_loss(model(guess), target), guess)
            guess = (guess - 0.5 * grad).detach().requires_grad_()  # the last one is the answer, not a loss input
    """)
    assert [(kind, line) for kind, line, _ in loud(traced)] == [("unused_parameter", script.line("stray"))]


CLAMPED = """
class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(4, 2)
        self.scale = nn.Parameter(torch.tensor([START]))

    def forward(self, inputs):
        return F.normalize(self.embed(inputs), dim=1) * self.scale.clamp_min(1e-2)  # <- clamp

model = Scaled()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
inputs, target = torch.randn(8, 4), torch.randn(8, 2)
for step in range(4):
    opt.zero_grad()
    F.mse_loss(model(inputs), target).backward()
    opt.step()
"""


def test_a_clamp_beyond_every_value_of_a_parameter_is_named_where_its_gradient_stays_zero(snippet):
    """HypHC (b17a_hyphc_scale_clamp_saturates): a learned scale of 1e-3 under `clamp_min(1e-2)` gets a gradient of
    exactly zero at every step; the clamp is the line to change. Started inside the range, the scale learns through
    the same clamp (silent), and the zero gradient of a clamp that saturates in some calls while another path trains
    the tensor is no finding either."""
    script, traced = run(snippet, CLAMPED.replace("START", "1e-3"))
    assert loud(traced) == [("non_differentiable", script.line("clamp"), "Scaled.scale")]
    assert [f.severity for f in traced.findings if f.kind == "non_differentiable"] == ["error"]
    assert "beyond its bound" in traced.findings[0].message and "x.clamp(low, high)" in traced.findings[0].fix
    script, traced = run(snippet, CLAMPED.replace("START", "0.5"))
    assert loud(traced) == [] and all(w.got_grad for w in traced.watched)
    both = CLAMPED.replace("START", "1e-3").replace("* self.scale.clamp_min(1e-2)",
                                                    "* self.scale.clamp_min(1e-2) + self.scale")
    script, traced = run(snippet, both)
    assert loud(traced) == []


TOP_K_OVER_BASELINE = """
scorer = nn.Linear(3, 1)
opt = torch.optim.SGD(scorer.parameters(), lr=0.1)
x = torch.randn(8, 3)
for step in range(3):
    opt.zero_grad()
    scores = scorer(x).squeeze(1)
    keep = scores.topk(4).indices  # <- topk
    {flatten}
    # the kept scores over the mean of all: a shift of every score (the bias) changes nothing
    (scores[keep].mean() - scores.mean()).backward()
    opt.step()
"""


def test_a_gradient_zeroed_by_the_mathematics_beside_top_k_indices_is_no_cut(snippet):
    """PyG's SelectTopK scores nodes with a weight divided by its own norm and keeps the top k (the
    pyg_sagpooling program): the weight's gradient is zero by scale invariance, exactly zero on some machines. The
    top-k's indices carry no gradient by design and zero none: a gradient that arrived came through the scores, so
    it is the mathematics (a note), not a cut at the top-k. A value-flattening op on that path still is one."""
    script, traced = run(snippet, TOP_K_OVER_BASELINE.format(flatten="pass"))
    assert loud(traced) == []
    notes = [f for f in traced.findings if f.kind == "non_differentiable"]
    assert [(f.severity, f.tensor) for f in notes] == [("info", "Linear.bias")]
    assert "exactly zero" in notes[0].message
    script, traced = run(snippet, TOP_K_OVER_BASELINE.format(flatten="scores = scores.round()  # <- round"))
    assert ("non_differentiable", script.line("round"), "Linear.weight") in loud(traced)
