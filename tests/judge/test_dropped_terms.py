"""Loss terms dropped before any backward ran through them (`cut_term`): a scalar user code made from trained
tensors that nothing used, rebound in a loop, left behind by a ``return``, or made every step and left out of the
loss. Scalars that were logged, differentiated, summed into a loss first or made by an evaluation stay silent."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

PRELUDE = """
import torch
from torch import nn
import torch.nn.functional as F
torch.manual_seed(0)
x, y = torch.randn(8, 4), torch.randn(8, 1)
model = nn.Linear(4, 1)
prior = nn.Linear(4, 1)
opt = torch.optim.SGD(list(model.parameters()) + list(prior.parameters()), lr=0.1)
"""


def run(snippet, code: str):
    script = snippet(PRELUDE + textwrap.dedent(code))
    found = script.run().findings
    return script, [(f.kind, f.severity, f.line) for f in found if f.severity in ("error", "warning")], found


def test_a_term_rebound_before_it_was_summed_is_named_where_it_was_dropped(snippet):
    """PyTorch-BayesianCNN#25: ``x, _kl = layer(x)`` in a loop that never adds ``_kl``: each layer's term goes
    when the next call rebinds the name."""
    script, loud, found = run(snippet, """
    encoder = nn.Linear(4, 4)
    opt.add_param_group({"params": list(encoder.parameters())})
    def layer(net, h):
        return net(h), net.weight.pow(2).sum()  # <- made
    for step in range(3):
        kl = 0
        h, _kl = layer(encoder, x)
        out, _kl = layer(model, h)  # <- dropped
        kl = kl + _kl
        loss = F.mse_loss(out + prior(x), y) + kl
        opt.zero_grad()
        loss.backward()
        opt.step()
    """)
    assert loud == [("cut_term", "warning", script.line("dropped"))]
    assert found[0].tensor == "encoder.weight"
    assert [(r.role, r.line) for r in found[0].related] == [("defined", script.line("made"))]


def test_a_term_left_behind_by_a_return_is_named_at_the_return(snippet):
    """crosscode#3: the total with the auxiliary term is built, and the function returns the other loss."""
    script, loud, _ = run(snippet, """
    def losses():
        main = F.mse_loss(model(x) + prior(x), y)
        total = main + 0.1 * prior(x).pow(2).mean()
        return main  # <- return
    for step in range(3):
        loss = losses()
        opt.zero_grad()
        loss.backward()
        opt.step()
    """)
    assert loud == [("cut_term", "warning", script.line("return"))]


def test_a_term_made_every_step_and_left_out_is_named_at_the_loss(snippet):
    """TFC-pretraining#37: the consistency term is computed at every step, and the loss that is pushed back leaves it
    out; it goes only when the next step rebinds it, after its own backward."""
    script, loud, _ = run(snippet, """
    for step in range(4):
        fit = F.mse_loss(model(x), y)
        consistency = (model(x) - prior(x)).pow(2).mean()
        loss = fit + 0.01 * prior(x).pow(2).mean()  # <- loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    """)
    assert loud == [("cut_term", "warning", script.line("loss"))]


@pytest.mark.parametrize("use", [
    "total = fit + 0.5 * reg",
    "total = fit; print(f'reg {reg:.3f}')",
    "total = fit; logged = reg.item()",
    "total = fit; logged = reg.detach()",
    "total = fit; grads = torch.autograd.grad(reg, [prior.weight])",
    "total = fit + (reg / fit).detach() * prior(x).pow(2).mean()",  # read through a value computed from it
    "total = fit + 0.5 * reg; print((fit - reg).requires_grad)",  # a temporary read in a way no op shows
    "total = fit\n        with torch.no_grad():\n            logged = torch.stack([fit, reg]).sum()",
])
def test_a_term_summed_logged_or_differentiated_is_no_dropped_term(snippet, use):
    _, loud, _ = run(snippet, f"""
    for step in range(3):
        fit = F.mse_loss(model(x) + prior(x), y)
        reg = prior.weight.pow(2).sum()
        {use}
        opt.zero_grad()
        total.backward()
        opt.step()
    """)
    assert loud == []


def test_two_backwards_of_one_forward_and_an_evaluation_with_gradients_on_are_silent(snippet):
    """A GAN's two losses from one forward, each pushed back by its own backward; an evaluation loop that forgot
    no_grad makes losses no backward runs through, before the next step's forward."""
    _, loud, _ = run(snippet, """
    def evaluate():
        return F.mse_loss(model(x), y)
    for epoch in range(2):
        for step in range(2):
            score = model(x) + prior(x)
            d_loss = score.mean()
            g_loss = -score.mean()
            opt.zero_grad()
            d_loss.backward(retain_graph=True)
            g_loss.backward()
            opt.step()
        for batch in range(3):
            val = evaluate()
    """)
    assert loud == []


def test_terms_summed_into_a_loss_a_function_backpropagates_and_a_returned_statistic_are_silent(snippet):
    """An actor-critic update: the two losses are locals summed into a loss that goes at once, after its backward;
    the function also returns a statistic computed with gradients that the caller never uses."""
    _, loud, _ = run(snippet, """
    def update():
        fit = F.mse_loss(model(x), y)
        reg = prior(x).pow(2).mean()
        opt.zero_grad()
        (fit + 0.5 * reg).backward()
        opt.step()
        return fit.item(), prior(x).abs().mean()
    for step in range(3):
        value, spread = update()
    """)
    assert loud == []


def test_a_term_kept_unused_by_the_function_that_received_it_is_named_at_the_call_that_returned(snippet):
    """mmaction2's TPN: the neck returns its auxiliary loss, the recognizer binds it to ``_`` and returns without it;
    the line that called the recognizer is where the term went (not the return of the function that made it)."""
    script, loud, found = run(snippet, """
    def auxiliary(h):
        return {"aux": h.pow(2).mean()}
    def forward():
        h = prior(x)
        _ = auxiliary(h)
        return model(x) + h
    for step in range(3):
        out = forward()  # <- call
        loss = F.mse_loss(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    """)
    assert loud == [("cut_term", "warning", script.line("call"))]
    assert f"the function called at {script.path.name}:{script.line('call')} returned" in found[0].message


@pytest.mark.parametrize("call", ["Attach.apply(w, aux)  # <- call", "w = Attach.apply(w, aux)  # <- call"])
def test_a_custom_function_s_discarded_output_is_named_at_its_call(snippet, call):
    """NeMo Automodel#1408: the MoE gate attaches its auxiliary loss to the routing weights with a Function and throws
    the Function's output away; the auxiliary loss inside it is told as that one drop, not again. Kept, it trains."""
    script, loud, _ = run(snippet, f"""
    class Attach(torch.autograd.Function):
        @staticmethod
        def forward(ctx, weights, aux):
            ctx.save_for_backward(aux)
            return weights
        @staticmethod
        def backward(ctx, grad):
            (aux,) = ctx.saved_tensors
            return grad, torch.ones_like(aux)
    def gate():
        w = torch.sigmoid(prior(x))
        aux = prior.weight.pow(2).sum()
        {call}
        return w
    for step in range(3):
        loss = F.mse_loss(model(x) + gate(), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    """)
    assert loud == ([("cut_term", "warning", script.line("call"))] if not call.startswith("w =") else [])


def test_a_term_taken_only_by_a_dropped_term_is_told_as_that_one_drop(snippet):
    """The NeMo report as the corpus holds it: the auxiliary loss went into the Function whose output was thrown away;
    when the gate returns, the auxiliary loss goes too, and is no second finding."""
    case = Path(__file__).parents[1] / "cases" / "b4_moe_aux_scaler_discarded" / "bug.py"
    script = snippet(case.read_text())
    found = [(f.kind, f.line) for f in script.run().findings if f.severity in ("error", "warning")]
    assert found == [("cut_term", script.line("cut_term"))]
