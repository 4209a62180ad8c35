"""Loss terms that carry no gradient (`cut_term`) and gradients taken without ``create_graph``
(`grad_no_graph`): a term of the loss reaches the trained tensors only through a cut while the other terms
do reach them, so it adds nothing to their update. Cut terms that have a gradient of their own (a GAN's
discriminator step on a detached fake, an actor-critic's detached advantage, a TD target) stay silent."""
from __future__ import annotations

import textwrap

import pytest

PRELUDE = """
import torch
from torch import nn
import torch.nn.functional as F
torch.manual_seed(0)
x, y = torch.randn(8, 4), torch.randn(8, 1)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
"""


def findings(snippet, code: str):
    script = snippet(PRELUDE + textwrap.dedent(code))
    return script, script.run().findings


def loud(found):
    return [(f.kind, f.severity, f.line, f.tensor) for f in found if f.severity in ("error", "warning")]


@pytest.mark.parametrize(("cut", "term"), [
    ("penalty = model(x).detach().pow(2).mean()  # <- cut", "loss = F.mse_loss(model(x), y) + penalty  # <- added"),
    ("penalty = model(x).abs().mean().item()  # <- cut", "loss = F.mse_loss(model(x), y) + 0.1 * penalty  # <- added"),
    ("penalty = torch.tensor([model(x).abs().mean()])  # <- cut", "loss = F.mse_loss(model(x), y) + penalty.sum()  # <- added"),
])
def test_a_dead_term_is_named_at_its_cut_with_the_line_that_added_it(snippet, cut, term):
    script, found = findings(snippet, f"""
    for step in range(2):
        {cut}
        {term}
        opt.zero_grad()
        loss.backward()
        opt.step()
    """)
    terms = [f for f in found if f.kind == "cut_term"]
    assert {(f.line, f.severity) for f in terms} == {(script.line("cut"), "warning")}
    assert {f.tensor for f in terms} == {"Linear.weight", "Linear.bias"}
    assert all({(p.role, p.line) for p in f.related} == {("symptom", script.line("added"))} for f in terms)
    assert all(f"adds nothing to {f.tensor}'s update" in f.message for f in terms)


def test_a_term_built_under_no_grad_is_worded_as_such(snippet):
    script, found = findings(snippet, """
    for step in range(2):
        with torch.no_grad():
            smooth = model(x).diff(dim=0).abs().mean()  # <- cut
        loss = F.mse_loss(model(x), y) + smooth
        opt.zero_grad()
        loss.backward()
        opt.step()
    """)
    term = next(f for f in found if f.kind == "cut_term")
    assert term.line == script.line("cut") and "ran with gradients disabled" in term.message
    assert "no_grad" in term.fix


def test_a_gradient_penalty_without_create_graph_is_named_at_autograd_grad(snippet):
    script, found = findings(snippet, """
    for step in range(2):
        xs = x.clone().requires_grad_(True)
        out = model(xs)
        grad_x = torch.autograd.grad(out.sum(), xs, retain_graph=True)[0]  # <- grad
        loss = F.mse_loss(out, y) + (grad_x.norm(dim=1) - 1).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    """)
    terms = [f for f in found if f.kind == "cut_term"]
    assert {f.line for f in terms} == {script.line("grad")}
    assert "create_graph=True" in terms[0].fix


@pytest.mark.parametrize("code", [
    # the fixed gradient penalty
    """
    for step in range(2):
        xs = x.clone().requires_grad_(True)
        out = model(xs)
        grad_x = torch.autograd.grad(out.sum(), xs, create_graph=True)[0]
        loss = F.mse_loss(out, y) + (grad_x.norm(dim=1) - 1).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    """,
    # a TD target from the same network under no_grad (semi-gradient Q-learning)
    """
    for step in range(2):
        with torch.no_grad():
            target = y + 0.9 * model(x)
        loss = F.mse_loss(model(x), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
    """,
    # an actor-critic's detached advantage: the term has a gradient through the log-probabilities
    """
    critic = nn.Linear(4, 1)
    opt2 = torch.optim.SGD([*model.parameters(), *critic.parameters()], lr=0.1)
    for step in range(2):
        value = critic(x)
        advantage = y - value
        loss = -(torch.sigmoid(model(x)).log() * advantage.detach()).mean() + advantage.pow(2).mean()
        opt2.zero_grad()
        loss.backward()
        opt2.step()
    """,
    # a GAN's discriminator step on a detached fake: D's term has a gradient; G is another optimizer's
    """
    D = nn.Linear(1, 1)
    opt_d = torch.optim.SGD(D.parameters(), lr=0.1)
    for step in range(2):
        fake = model(x)
        d_loss = F.softplus(-D(y)).mean() + F.softplus(D(fake.detach())).mean()
        opt_d.zero_grad()
        d_loss.backward()
        opt_d.step()
        g_loss = F.softplus(-D(model(x))).mean()
        opt.zero_grad()
        g_loss.backward()
        opt.step()
    """,
    # a logged number added to a running total, not to the loss that trains
    """
    total = 0.0
    for step in range(2):
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total = total + loss.item()
    """,
], ids=["penalty_create_graph", "td_target", "detached_advantage", "gan_d_step", "logged_total"])
def test_terms_with_a_gradient_of_their_own_stay_silent(snippet, code):
    _, found = findings(snippet, code)
    assert loud(found) == []


def test_a_sample_drawn_without_reparameterization_cuts_its_term_from_the_encoder(snippet):
    script, found = findings(snippet, """
    dec = nn.Linear(1, 4)
    vae = torch.optim.Adam([*model.parameters(), *dec.parameters()], lr=1e-3)
    for step in range(2):
        mu = model(x)
        z = torch.normal(mu, torch.ones_like(mu))  # <- cut
        recon = F.mse_loss(dec(z), x)
        loss = recon + mu.pow(2).mean()  # <- added
        vae.zero_grad()
        loss.backward()
        vae.step()
    """)
    terms = [f for f in found if f.kind == "cut_term"]
    assert {(f.line, f.severity) for f in terms} == {(script.line("cut"), "warning")}
    assert {f.tensor for f in terms} == {"model.weight", "model.bias"}  # the encoder, not the decoder
    assert all("randn_like" in f.fix for f in terms)
    assert all({(p.role, p.line) for p in f.related} == {("symptom", script.line("added"))} for f in terms)


def test_a_distributions_sample_cuts_its_term_from_the_encoder(snippet):
    """pyro's VAE comparison (b42f_pyro_vae): ``Normal(mu, sigma).sample()`` draws under the distribution's own
    no_grad, so the reconstruction term reaches the decoder only; the KL term still trains the encoder. A cut term of
    the encoder, at the ``sample()``, with ``rsample()`` as the fix; the twin with ``rsample()`` is silent."""
    code = """
    dec = nn.Linear(1, 4)
    vae = torch.optim.Adam([*model.parameters(), *dec.parameters()], lr=1e-3)
    for step in range(2):
        mu = model(x)
        z = torch.distributions.Normal(mu, torch.ones_like(mu)).DRAW()  # <- cut
        loss = F.mse_loss(dec(z), x) + mu.pow(2).mean()
        vae.zero_grad()
        loss.backward()
        vae.step()
    """
    script, found = findings(snippet, code.replace("DRAW", "sample"))
    terms = [f for f in loud(found)]
    assert {(f[0], f[2]) for f in terms} == {("cut_term", script.line("cut"))}, terms
    fixes = {f.fix for f in found if f.kind == "cut_term"}
    assert all("rsample()" in fix for fix in fixes)
    _, found = findings(snippet, code.replace("DRAW", "rsample"))
    assert loud(found) == []


def test_a_reparameterized_sample_is_silent(snippet):
    _, found = findings(snippet, """
    dec = nn.Linear(1, 4)
    vae = torch.optim.Adam([*model.parameters(), *dec.parameters()], lr=1e-3)
    for step in range(2):
        mu = model(x)
        z = mu + torch.randn_like(mu)
        loss = F.mse_loss(dec(z), x) + mu.pow(2).mean()
        vae.zero_grad()
        loss.backward()
        vae.step()
    """)
    assert loud(found) == []


def test_a_term_cut_from_a_tensor_the_script_updates_by_hand_is_named(snippet):
    """No optimizer holds an adversarial input, but the script steps it with its own `.grad`: a term cut
    from it adds nothing to that step either."""
    script, found = findings(snippet, """
    delta = torch.zeros(8, 4)
    for step in range(2):
        delta.requires_grad_(True)
        feature_gap = (model(x + delta) - model(x)).abs().mean()
        loss = F.mse_loss(model(x + delta), y) + feature_gap.detach().item()  # <- cut
        loss.backward()
        delta = (delta + 0.01 * delta.grad.sign()).detach()
    """)
    terms = [f for f in found if f.kind == "cut_term"]
    assert terms and {f.line for f in terms} == {script.line("cut")}
    assert "delta" in {f.tensor for f in terms}


def test_gradients_taken_for_a_penalty_that_no_loss_uses_are_named_at_the_loss(snippet):
    script, found = findings(snippet, """
    for step in range(3):
        x_p = x.clone().requires_grad_(True)
        grad = torch.autograd.grad(model(x_p).sum(), x_p, create_graph=True)[0]  # <- taken
        penalty = (grad.norm(2, dim=1) - 1).pow(2).mean()
        loss = F.mse_loss(model(x), y)  # <- loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    """)
    terms = [f for f in found if f.kind == "cut_term"]
    assert [(f.line, f.severity, f.count) for f in terms] == [(script.line("loss"), "warning", 3)]
    assert {(p.role, p.line) for p in terms[0].related} == {("defined", script.line("taken"))}
    assert "create_graph=True" in terms[0].message and "Linear.weight" in terms[0].tensor


@pytest.mark.parametrize("use", [
    "loss = F.mse_loss(model(x), y) + 10 * penalty",
    "loss = F.mse_loss(model(x), y)\n        penalty.backward(retain_graph=True)",
])
def test_a_penalty_that_reaches_a_backward_is_silent(snippet, use):
    _, found = findings(snippet, f"""
    for step in range(3):
        x_p = x.clone().requires_grad_(True)
        grad = torch.autograd.grad(model(x_p).sum(), x_p, create_graph=True)[0]
        penalty = (grad.norm(2, dim=1) - 1).pow(2).mean()
        opt.zero_grad()
        {use}
        loss.backward()
        opt.step()
    """)
    assert loud(found) == []


@pytest.mark.parametrize("code", [
    # a per-sample penalty detached before the batch mean (R3GAN#20)
    """
    for step in range(2):
        penalty = model(x).pow(2).squeeze(1).detach()  # <- cut
        loss = (F.softplus(model(x)).squeeze(1) + 0.5 * penalty).mean()  # <- added
        opt.zero_grad()
        loss.backward()
        opt.step()
    """,
    # a per-token term computed in a rollout under no_grad, added before the masked mean (open-instruct#530)
    """
    with torch.no_grad():
        old = model(x).squeeze(1)  # <- cut
    mask = torch.ones(8)
    for step in range(2):
        new = model(x).squeeze(1)
        loss = ((-new.sigmoid() + 0.05 * (old - 1.0)) * mask).sum() / mask.sum()  # <- added
        opt.zero_grad()
        loss.backward()
        opt.step()
    """,
], ids=["per_sample_penalty", "per_token_rollout_term"])
def test_a_dead_term_added_before_the_reduction_is_named_at_its_cut(snippet, code):
    script, found = findings(snippet, code)
    terms = [f for f in found if f.kind == "cut_term"]
    assert {(f.line, f.tensor) for f in terms} == {(script.line("cut"), "Linear.weight"),
                                                   (script.line("cut"), "Linear.bias")}
    assert all({(p.role, p.line) for p in f.related} == {("symptom", script.line("added"))} for f in terms)


@pytest.mark.parametrize("code", [
    # a straight-through estimator: the detached difference rides on the input into the next layer (VQ-VAE)
    """
    decoder = nn.Linear(1, 1)
    opt2 = torch.optim.SGD([*model.parameters(), *decoder.parameters()], lr=0.1)
    for step in range(2):
        z = model(x)
        quantized = z.round()
        loss = F.mse_loss(decoder(z + (quantized - z).detach()), y) + (z - quantized.detach()).pow(2).mean()
        opt2.zero_grad()
        loss.backward()
        opt2.step()
    """,
    # a TD target of the same network subtracted per sample, the square written as a product
    """
    for step in range(2):
        with torch.no_grad():
            target = y + 0.9 * model(x)
        error = model(x) - target
        loss = (error * error).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    """,
], ids=["straight_through", "td_error_squared_by_hand"])
def test_detached_values_riding_along_per_sample_stay_silent(snippet, code):
    _, found = findings(snippet, code)
    assert loud(found) == []


INNER_STEP = """
params = list(model.parameters())
for step in range(3):
    inner = F.mse_loss(F.linear(x, *params), y)
    grads = torch.autograd.grad(inner, params{create_graph})  # <- cut
    fast = [p - 0.1 * g for p, g in zip(params, grads)]  # <- step
    outer = F.mse_loss(F.linear(x, *fast), y)
    opt.zero_grad()
    outer.backward()
    opt.step()
"""


def test_an_inner_step_on_a_gradient_without_graph_is_named_at_autograd_grad(snippet):
    # MAML's inner loop: the outer loss still reaches the weights directly, but not through the gradient
    script, found = findings(snippet, INNER_STEP.format(create_graph=""))
    cut = [f for f in found if f.kind == "cut_term"]
    assert {(f.line, f.tensor, f.severity) for f in cut} == {(script.line("cut"), "Linear.weight", "warning"),
                                                            (script.line("cut"), "Linear.bias", "warning")}
    assert all(any(p.role == "symptom" and p.line == script.line("step") for p in f.related) for f in cut)
    assert "second-order" in cut[0].message and "create_graph=True" in cut[0].fix


def test_an_inner_step_with_create_graph_is_silent(snippet):
    _, found = findings(snippet, INNER_STEP.format(create_graph=", create_graph=True"))
    assert loud(found) == []


def test_a_gradient_without_graph_that_only_scales_a_loss_is_silent(snippet):
    # a loss weighted by a gradient norm taken as a constant: no step on the weights is built from the gradient
    _, found = findings(snippet, """
    for step in range(3):
        loss = F.mse_loss(model(x), y)
        (g,) = torch.autograd.grad(loss, [model.weight], retain_graph=True)
        weighted = loss / (g.norm() + 1.0)
        opt.zero_grad()
        weighted.backward()
        opt.step()
    """)
    assert loud(found) == []


def test_a_dead_term_exactly_zero_at_first_is_named_once_the_line_adds_it_nonzero(snippet):
    # FedProx's proximal term from `.data`: zero at the round's first step, the weights still equal to the anchor
    script, found = findings(snippet, """
    anchor = nn.Linear(4, 1)
    anchor.load_state_dict(model.state_dict())
    for step in range(3):
        loss = F.mse_loss(model(x), y)
        for w, w_t in zip(anchor.parameters(), model.parameters()):
            loss += 0.5 * torch.norm(w.data - w_t.data) ** 2  # <- added
        opt.zero_grad()
        loss.backward()
        opt.step()
    """)
    terms = [f for f in found if f.kind == "cut_term"]
    assert {(f.line, f.severity, f.tensor) for f in terms} == {(script.line("added"), "warning", "model.weight"),
                                                               (script.line("added"), "warning", "model.bias")}


def test_a_detached_bonus_weighted_by_zero_at_every_step_stays_silent(snippet):
    script, found = findings(snippet, """
    coefficient = 0.0
    for step in range(3):
        out = model(x)
        loss = F.mse_loss(out, y) + coefficient * out.detach().abs().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    """)
    assert loud(found) == []
