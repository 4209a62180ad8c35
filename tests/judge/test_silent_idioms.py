"""Correct idioms that used to get findings stay silent (or get a note where the mathematics explains a
zero gradient), and the real bug beside each idiom is still found at its own line."""
from __future__ import annotations

import textwrap

import pytest

PRELUDE = """
import copy
import torch
from torch import nn
import torch.nn.functional as F
torch.manual_seed(0)
x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
"""


def program(code: str) -> str:
    return PRELUDE + textwrap.dedent(code)


def loud(t):
    return [(f.kind, f.tensor, f.line, f.severity) for f in t.findings if f.severity in ("error", "warning")]


def missing(t):
    return [w.name for w in t.watched if w.got_grad is False]


def test_a_leaf_differentiated_only_by_autograd_grad_is_silent(snippet):
    script = snippet(program("""
    model = nn.Linear(4, 3)
    image = x.clone().requires_grad_(True)
    scores = model(image)
    top = scores.gather(1, scores.argmax(1, keepdim=True)).sum()
    (saliency,) = torch.autograd.grad(top, image)
    """))
    t = script.run()
    assert loud(t) == [] and missing(t) == []


def test_backward_with_inputs_leaves_the_others_alone_on_purpose(snippet):
    script = snippet(program("""
    encoder, head = nn.Linear(4, 8), nn.Linear(8, 3)
    opt = torch.optim.Adam(head.parameters())
    loss = F.cross_entropy(head(encoder(x)), y)
    loss.backward(inputs=list(head.parameters()))
    opt.step()
    """))
    t = script.run()
    assert loud(t) == [] and missing(t) == []


def test_differentiation_apis_count_as_differentiating_the_leaf(snippet):
    script = snippet(program("""
    w = torch.randn(4, requires_grad=True)
    _, hvp = torch.autograd.functional.hvp(lambda w: torch.tanh(x @ w).pow(2).sum(), w, torch.ones(4))
    probe = torch.randn(3, dtype=torch.double, requires_grad=True)
    torch.autograd.gradcheck(torch.sin, (probe,))
    """))
    t = script.run()
    assert loud(t) == [] and missing(t) == []


def test_exactly_zero_gradients_are_one_note_and_a_cut_is_still_an_error(snippet):
    silent = snippet(program("""
    critic = nn.Linear(4, 3)
    opt = torch.optim.SGD(critic.parameters(), lr=0.1)
    F.relu(critic(x) - 1e3).sum().backward()  # every unit dead: d/dw is exactly zero
    opt.step()
    """))
    t = silent.run()
    assert loud(t) == []
    notes = [(f.kind, f.tensor, f.severity, f.count) for f in t.findings]
    assert notes == [("non_differentiable", "Linear.weight", "info", 2)]
    assert "Linear.bias" in t.findings[0].message
    cut = snippet(program("""
    w = torch.randn(4, requires_grad=True)
    (x @ w).round().sum().backward()  # <- round
    """))
    assert [(f.kind, f.line, f.severity) for f in cut.run().findings] == [
        ("non_differentiable", cut.line("round"), "error")]


def test_deepcopy_is_no_cut_and_a_real_cut_in_the_copy_is_found_at_its_line(snippet):
    script = snippet(program("""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 3)
            self.alpha = nn.Parameter(torch.ones(1))

        def forward(self, x):
            return self.fc(x) * self.alpha.item()  # <- item

    template = Net()
    model = copy.deepcopy(template)
    target = copy.deepcopy(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        with torch.no_grad():
            reference = target(x).sum()
        (loss + 0 * reference).backward()
        opt.step()
    """))
    t = script.run()
    assert [(kind, line) for kind, _, line, _ in loud(t)] == [("item", script.line("item"))]
    assert loud(t)[0][1].endswith("alpha")


def test_rebinding_the_optimizer_for_a_new_phase_is_silent(snippet):
    script = snippet(program("""
    model = nn.Linear(4, 3)
    opt = torch.optim.Adam(model.parameters())
    for _ in range(2):
        opt.zero_grad(); F.cross_entropy(model(x), y).backward(); opt.step()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        opt.zero_grad(); F.cross_entropy(model(x), y).backward(); opt.step()
    """))
    assert loud(script.run()) == []


def test_a_parameter_added_with_add_param_group_is_in_an_optimizer(snippet):
    script = snippet(program("""
    body, head = nn.Linear(4, 4).requires_grad_(False), nn.Linear(4, 3)
    opt = torch.optim.SGD(head.parameters(), lr=0.1)
    body.requires_grad_(True)
    opt.add_param_group({"params": body.parameters()})
    F.cross_entropy(head(body(x)), y).backward()
    opt.step()
    """))
    assert loud(script.run()) == []


def test_reparametrised_parameters_are_judged_through_their_parametrizations(snippet):
    script = snippet(program("""
    from torch.nn.utils.parametrizations import spectral_norm, weight_norm
    import torch.nn.utils.parametrize as parametrize

    class Symmetric(nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

    square = nn.Linear(4, 4)
    parametrize.register_parametrization(square, "weight", Symmetric())
    model = nn.Sequential(weight_norm(nn.Linear(4, 4)), spectral_norm(nn.Linear(4, 4)), square,
                          nn.utils.weight_norm(nn.Linear(4, 3)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    F.cross_entropy(model(x), y).backward()
    opt.step()
    """))
    t = script.run()
    assert loud(t) == [] and missing(t) == []


def test_results_kept_on_a_module_are_not_unregistered_parameters(snippet):
    script = snippet(program("""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 3)
            self.cache = None

        def forward(self, x, y):
            self.cache = self.fc(x)
            self.loss = F.cross_entropy(self.cache, y)
            return self.cache

    model = Model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(x, y)
    model.loss.backward()
    opt.step()
    """))
    assert loud(script.run()) == []


def test_embedding_with_padding_idx_runs_under_the_trace(snippet):
    script = snippet(program("""
    emb = nn.Embedding(10, 4, padding_idx=0)
    emb(torch.tensor([[0, 1, 2]])).sum().backward()
    """))
    assert loud(script.run()) == []


def test_initialisers_are_never_the_last_use(snippet):
    script = snippet(program("""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.used = nn.Linear(4, 3)
            self.unused = nn.Parameter(torch.empty(3, 4))  # <- param
            nn.init.orthogonal_(self.unused)

        def forward(self, x):
            return self.used(x)

    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    F.cross_entropy(model(x), y).backward()
    opt.step()
    """))
    found = [(f.kind, f.tensor, f.line) for f in script.run().findings if f.severity != "info"]
    assert found == [("unused_parameter", "Net.unused", script.line("param"))]


def test_a_finding_without_a_place_takes_the_first_user_line_the_trace_knows(snippet):
    from gradcheck_l2c.judge.run import Run

    script = snippet(program("""
    w = torch.randn(3, requires_grad=True)  # <- made
    w.sum().backward()
    """))
    t = script.run()
    finding = Run(t._state.record(), set()).finding("optimizer", "warning", "w", None, "message", "fix")
    assert (finding.file, finding.line) == (str(script.path), script.line("made"))


GAN = """
G, D = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 4)), nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
opt_g, opt_d = torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters())
bce = nn.BCEWithLogitsLoss()
ones, zeros = torch.ones(8, 1), torch.zeros(8, 1)
for step in range(3):
    fake = G(torch.randn(8, 2))
    d_loss = bce(D(torch.randn(8, 4)), ones) + bce(D({d_fake}), zeros)
    {zero_d}
    d_loss.backward()
    opt_d.step()
    {zero_g}
    fake = G(torch.randn(8, 2))
    g_loss = bce(D({g_fake}), ones)  # <- g_loss
    g_loss.backward()
    opt_g.step()  # <- g_step
"""


def gan(d_fake: str, g_fake: str, zero: str = "zero_grad()") -> str:
    return program(GAN.format(d_fake=d_fake, g_fake=g_fake, zero_d=f"opt_d.{zero}; opt_g.{zero}",
                              zero_g=f"opt_g.{zero}"))


def test_gan_detaches_are_judged_per_training_step(snippet):
    """The discriminator step's detach is silent: the generator gets its gradient in its own step.
    Without any detach, too. A detach in the generator step is the cut, named at its line, with the
    step that found no gradient as the symptom, even though the discriminator's loss reached G."""
    for d_fake in ("fake.detach()", "fake"):
        t = snippet(gan(d_fake, "fake")).run()
        assert loud(t) == [] and missing(t) == [], d_fake
    script = snippet(gan("fake", "fake.detach()"))
    t = script.run()
    cuts = [f for f in t.findings if f.severity == "error"]
    assert {f.tensor for f in cuts} == {"G.0.weight", "G.0.bias", "G.2.weight", "G.2.bias"}
    assert {(f.kind, f.line) for f in cuts} == {("detach", script.line("g_loss"))}
    assert all(r.role == "symptom" and r.line == script.line("g_step") for f in cuts for r in f.related)
    assert "Adam.step() found no gradient for it (3 times)" in cuts[0].message
    assert sorted(missing(t)) == sorted(f.tensor for f in cuts)
    assert not [f for f in t.findings if f.kind == "optimizer"]  # not "erased by zero_grad()": the cut is the cause


def test_zeroed_gradients_are_no_gradient_for_the_step(snippet):
    """zero_grad(set_to_none=False) leaves zeros where the discriminator's gradient was: still none for
    the generator's step."""
    t = snippet(gan("fake", "fake.detach()", zero="zero_grad(set_to_none=False)")).run()
    assert {(f.kind, f.tensor) for f in t.findings if f.severity == "error"} == {
        ("detach", name) for name in ("G.0.weight", "G.0.bias", "G.2.weight", "G.2.bias")}
    t = snippet(gan("fake.detach()", "fake", zero="zero_grad(set_to_none=False)")).run()
    assert loud(t) == [] and missing(t) == []


def test_a_tensor_trained_in_some_steps_and_cut_in_others_is_silent(snippet):
    """Alternating phases with one optimizer (a detached encoder for the head's warm-up steps, the whole
    model in the others), and an actor-critic whose actor loss uses the critic's value as a number in a
    separate, later backward: every tensor gets its gradient in the steps meant for it."""
    script = snippet(program("""
    encoder, head = nn.Linear(4, 8), nn.Linear(8, 3)
    opt = torch.optim.SGD([*encoder.parameters(), *head.parameters()], lr=0.1)
    for step in range(4):
        feats = encoder(x)
        if step % 2:
            feats = feats.detach()
        opt.zero_grad()
        F.cross_entropy(head(feats), y).backward()
        opt.step()

    actor, critic = nn.Linear(4, 2), nn.Linear(4, 1)
    opt = torch.optim.Adam([*actor.parameters(), *critic.parameters()])
    for step in range(3):
        value = critic(x).squeeze(1)
        returns = torch.randn(8)
        opt.zero_grad()
        F.mse_loss(value, returns).backward()
        log_prob = torch.log_softmax(actor(x), 1)[:, 0]
        (-(log_prob * (returns - value.detach())).mean() - 0.01 * (returns - value.mean().item()).mean()).backward()
        opt.step()
    """))
    t = script.run()
    assert loud(t) == [] and missing(t) == []


def test_a_head_trained_in_one_phase_and_cut_from_the_next_phase_s_loss_is_named(snippet):
    """Avalanche's LwF: a new optimizer per experience; the old task's head, trained in the first, is meant to learn
    in the second through the distillation term, which computes it under the previous model's no_grad: each step of
    the second optimizer finds no gradient for it."""
    script = snippet(program("""
    trunk, heads = nn.Linear(4, 8), nn.ModuleList([nn.Linear(8, 3), nn.Linear(8, 3)])
    prev = None
    for task in range(2):
        opt = torch.optim.SGD([*trunk.parameters(), *heads.parameters()], lr=0.1)
        for step in range(3):
            feats = trunk(x)
            loss = F.cross_entropy(heads[task](feats), y)
            if prev is not None:
                with torch.no_grad():
                    old = prev(feats)
                    now = heads[0](feats)  # <- cut
                loss = loss + F.mse_loss(now, old)
            opt.zero_grad()
            loss.backward()
            opt.step()
        prev = copy.deepcopy(heads[0])
    """))
    found = [(kind, tensor, line) for kind, tensor, line, _ in loud(script.run())]
    assert ("no_grad", "ModuleList.0.weight", script.line("cut")) in found


def test_a_snapshot_of_an_unused_parameter_is_no_cut_the_parameter_is_unused(snippet):
    """``before = p.detach().clone()`` to see whether it learns (rtqichen/torchdiffeq#178): the copy never reaches a
    loss and is no explanation; the parameter the forward never uses is named where it is defined."""
    script = snippet(program("""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(4, 3)
            self.scale = nn.Parameter(torch.ones(3))  # <- defined

        def forward(self, x):
            return self.body(x)

    model = Model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    before = model.scale.detach().clone()
    for step in range(2):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    print(model.scale.grad, torch.equal(before, model.scale))
    """))
    t = script.run()
    assert [(kind, line) for kind, _, line, _ in loud(t)] == [("unused_parameter", script.line("defined"))]


def test_a_factory_shaped_like_a_parameter_under_no_grad_cuts_nothing_and_the_op_beside_it_is_named(snippet):
    """``torch.randn_like(w)`` reads only the shape of ``w``: noise drawn under no_grad and added to the loss is a
    constant, no cut of ``w`` (silent). A value of ``w`` taken into the same block is the cut, named by its own op
    (b16a_diagdistill: ``latent + 0.1 * torch.randn_like(latent)`` was named as `randn_like`)."""
    script = snippet(program("""
    model = nn.Linear(4, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        with torch.no_grad():
            noise = torch.randn_like(model.weight) + model.weight.new_zeros(3, 4)
        loss = F.cross_entropy(model(x), y) + 1e-3 * (noise ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    """))
    assert loud(script.run()) == []
    script = snippet(program("""
    model = nn.Linear(4, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        out = model(x)
        with torch.no_grad():
            noisy = out + 0.1 * torch.randn_like(out)  # <- cut
        loss = F.cross_entropy(out, y) + (noisy ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    """))
    t = script.run()
    assert {(kind, line) for kind, _, line, _ in loud(t)} == {("cut_term", script.line("cut"))}, loud(t)
    assert all("`add`" in f.message for f in t.findings if f.kind == "cut_term"), [f.message for f in t.findings]


def test_a_loss_printed_with_item_is_not_blamed_for_a_model_no_backward_reached(snippet):
    """functorch (b17b_functorch_make_functional_params_are_copies): the script trains a deep copy and prints the
    original model's loss with ``.item()`` before and after; the original gets no gradient because no backward
    reaches it, not because of the prints. A number from ``.item()`` that comes back into torch is still the cut."""
    script = snippet(program("""
    model = nn.Linear(4, 3)
    print("before:", F.cross_entropy(model(x), y).item())
    copy_of = copy.deepcopy(model)
    opt = torch.optim.SGD(copy_of.parameters(), lr=0.1)
    for step in range(3):
        opt.zero_grad()
        F.cross_entropy(copy_of(x), y).backward()
        opt.step()
    print("after:", F.cross_entropy(model(x), y).item())  # <- printed
    print(model.weight.grad)
    """))
    t = script.run()
    assert not [f for f in t.findings if f.kind == "item"], [(f.kind, f.line) for f in t.findings]
    script = snippet(program("""
    model = nn.Linear(4, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        opt.zero_grad()
        value = F.cross_entropy(model(x), y).item()  # <- item
        loss = torch.tensor(value, requires_grad=True)
        loss.backward()
        opt.step()
    """))
    t = script.run()
    assert ("item", script.line("item")) in {(f.kind, f.line) for f in t.findings if f.severity == "error"}


def test_the_last_perturbation_of_an_adversarial_loop_returned_detached_is_no_cut(snippet):
    """Madry's PGD training: each step remakes the perturbation as a leaf; the last one never needs a gradient and
    the adversarial batch is handed back detached."""
    script = snippet(program("""
    model = nn.Linear(4, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def pgd(x, y, eps=0.1, steps=3):
        delta = torch.zeros_like(x).requires_grad_()
        for _ in range(steps):
            loss = F.cross_entropy(model(x + delta), y)
            grad, = torch.autograd.grad(loss, delta)
            delta = (delta + 0.01 * grad.sign()).clamp(-eps, eps).detach().requires_grad_()
        return (x + delta).detach()

    for step in range(3):
        loss = F.cross_entropy(model(pgd(x, y)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    """))
    t = script.run()
    assert loud(t) == [] and missing(t) == []


def test_a_leaf_made_beside_one_that_learns_is_still_judged(snippet):
    """Two leaves made on one line are two calls: the one a detach cut off is named, though the other learnt."""
    script = snippet(program("""
    fast = [torch.randn(4, 3, requires_grad=True), torch.zeros(3, requires_grad=True)]
    for _ in range(2):
        w0 = fast[0].detach()  # <- detach
        F.cross_entropy(x @ w0 + fast[1], y).backward()
    """))
    t = script.run()
    assert [(kind, line) for kind, _, line, _ in loud(t)] == [("detach", script.line("detach"))]


def test_the_first_backward_of_sharpness_aware_minimisation_is_used_by_its_perturbation(snippet):
    """SAM: the first backward's gradients give the direction the weights are moved along (read by the script), then
    they are cleared; only the second backward's gradients reach the step."""
    script = snippet(program("""
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    base = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(4):
        F.cross_entropy(model(x), y).backward()
        with torch.no_grad():
            eps = [0.05 * p.grad / (p.grad.norm() + 1e-12) for p in model.parameters()]
            for p, e in zip(model.parameters(), eps):
                p.add_(e)
        base.zero_grad()
        F.cross_entropy(model(x), y).backward()
        with torch.no_grad():
            for p, e in zip(model.parameters(), eps):
                p.sub_(e)
        base.step()
        base.zero_grad()
    """))
    assert loud(script.run()) == []


def test_a_backward_whose_gradients_are_cleared_before_any_step_reads_them_is_still_named(snippet):
    script = snippet(program("""
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(4):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()  # <- step
        model(x).pow(2).mean().backward()  # <- unread
    """))
    t = script.run()
    assert [(kind, line) for kind, _, line, _ in loud(t)] == [("optimizer", script.line("step"))]
    assert f"before the backward at {script.path.name}:{script.line('unread')}" in t.findings[0].message


def test_a_parameter_the_script_steps_by_hand_is_not_in_no_optimizer(snippet):
    """A Lagrange multiplier kept as an nn.Parameter and raised along its gradient by hand: no optimizer holds it, and
    it changes; a parameter made beside it that nothing steps is still told."""
    script = snippet(program("""
    model = nn.Linear(4, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)  # <- optimizer
    lam = nn.Parameter(torch.tensor(1.0))
    scale = nn.Parameter(torch.tensor(1.0))
    for step in range(4):
        out = model(x) * scale
        loss = F.cross_entropy(out, y) + lam * (out.pow(2).mean() - 0.5)
        opt.zero_grad()
        lam.grad = scale.grad = None
        loss.backward()
        opt.step()
        with torch.no_grad():
            lam += 0.1 * lam.grad
            lam.clamp_(min=0)
    """))
    found = loud(script.run())
    assert [(kind, tensor, line) for kind, tensor, line, _ in found] == [("optimizer", "scale", script.line("optimizer"))]


@pytest.mark.parametrize("made", ["x.clone().requires_grad_(True)", "nn.Parameter(x.clone())"])
def test_an_input_optimised_through_a_model_left_unfrozen_is_silent(snippet, made):
    """Style transfer, adversarial examples, a search in a generator's latent space: the optimizers hold inputs only
    (plain leaves or Parameters no module holds), and the model the loss runs through gets gradients it never uses
    (left unfrozen): no parameter left out."""
    script = snippet(program(f"""
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    image = {made}
    opt = torch.optim.Adam([image], lr=0.05)
    for step in range(4):
        opt.zero_grad()
        loss = -F.cross_entropy(model(image), y)
        loss.backward()
        opt.step()
    """))
    t = script.run()
    assert loud(t) == [] and missing(t) == []


EMA_GENERATOR = """
class Scaled(nn.Module):  # StyleGAN2's EqualLinear: its own Parameters
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(3, 4))
        self.bias = nn.Parameter(torch.zeros(3))

    def forward(self, x):
        return F.linear(x, self.weight * 0.5, self.bias)

generator, g_ema = Scaled(), Scaled()
g_ema.load_state_dict(generator.state_dict())
opt = torch.optim.Adam({trained}, lr=0.01)
for step in range(3):
    loss = F.cross_entropy(generator(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        for p_ema, p in zip(g_ema.parameters(), generator.parameters()):
            p_ema.data.mul_(0.9).add_(p.data, alpha=0.1)
        sample = g_ema(x)  # <- sample
"""


def test_an_averaged_copy_built_anew_and_used_under_no_grad_is_silent(snippet):
    """StyleGAN2's g_ema: a second generator of the user's own layers, in no optimizer, averaged by hand and sampled
    under no_grad: not a model meant to learn."""
    t = snippet(program(EMA_GENERATOR.format(trained="generator.parameters()"))).run()
    assert loud(t) == [] and missing(t) == []


def test_the_same_layers_an_optimizer_holds_are_still_named_under_no_grad(snippet):
    script = snippet(program(EMA_GENERATOR.format(trained="g_ema.parameters()")))
    t = script.run()
    assert ("no_grad", script.line("sample")) in [(kind, line) for kind, _, line, _ in loud(t)]


def test_a_placeholder_replaced_before_any_backward_of_its_life_is_silent(snippet):
    """LSQ quantisation-aware fine-tuning (lsq-net): after full-precision training, a quantiser is built with a
    placeholder step size that ``init_from`` replaces with a data-initialised Parameter before any backward runs: the
    placeholder could never learn. The same placeholder kept while a backward runs, and unused, is still named."""
    code = '''
    class Quantiser(nn.Module):
        def __init__(self):
            super().__init__()
            self.s = nn.Parameter(torch.ones(1))  # <- placeholder

        def init_from(self, w):
            self.s = nn.Parameter(w.detach().abs().mean().reshape(1))

        def forward(self, w):
            return w / self.s

    model = nn.Linear(4, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def train(params, steps, quantiser=None):
        opt = torch.optim.SGD(params, lr=0.1)
        for step in range(steps):
            weight = model.weight if quantiser is None else quantiser(model.weight)
            loss = F.cross_entropy(F.linear(x, weight, model.bias), y)
            opt.zero_grad()
            loss.backward()
            opt.step()

    train(model.parameters(), 2)
    quantiser = Quantiser()
    LATER
    train([*model.parameters(), quantiser.s], 2, quantiser)
    '''
    t = snippet(program(code.replace("LATER", "quantiser.init_from(model.weight)"))).run()
    assert loud(t) == [] and missing(t) == []
    script = snippet(program(code.replace("LATER", "train(model.parameters(), 1)\n    quantiser.init_from(model.weight)")))
    t = script.run()
    assert ("unused_parameter", "Quantiser.s", script.line("placeholder"), "error") in loud(t), loud(t)


def test_lazy_modules_run_under_the_trace_and_their_parameters_are_watched_once_materialised(snippet):
    """A lazy layer (nn.LazyLinear, PyG's Linear(-1, ...)) registers a parameter without a shape until its first call:
    the trace must not read it then (the script raised "Can't access the shape of an uninitialized parameter")."""
    script = snippet(program("""
    model = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(3))
    model(x)  # the dry run that materialises them
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    """))
    t = script.run()
    assert loud(t) == [] and missing(t) == []
    assert len([w for w in t.watched if w.got_grad]) == 4
