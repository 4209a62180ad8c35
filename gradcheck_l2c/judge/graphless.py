"""The words for a backward refused because its loss has no graph (``element 0 of tensors does not require grad``), by
what the run knows of why: inference mode (the script's, or a library object's loop), a hook autograd runs during
another backward, gradients turned off around the call, a custom Function's forward, every parameter frozen, the loss
computed on its line from values without gradient, or nothing the trace saw."""
from __future__ import annotations

from gradcheck_l2c.judge.grad_mode_site import grad_disabled_at
from gradcheck_l2c.record.facts import AutogradError, Site


def under_inference_mode(fact: AutogradError) -> Site | None:
    """The innermost line running under the ``torch.inference_mode()`` a graphless backward was refused in."""
    for site in fact.detail.get("inference", ()):
        off = grad_disabled_at(site)
        if off is not None:
            return site
    return None


def inference_entered(fact: AutogradError) -> Site | None:
    """The user line that entered the ``torch.inference_mode()`` block a graphless backward was refused in, when no
    running line shows that block in its own function's text (``with context:`` of a context chosen earlier) and no
    library object's method turned it on."""
    if under_inference_mode(fact) is not None or fact.detail.get("owner_made") is not None:
        return None
    return fact.detail.get("entered")


def under_grad_off(fact: AutogradError) -> Site | None:
    """For a backward called with gradients off, the line to run with them on: the call into the function that ran
    that backward (it computed the loss too), unless that function itself turned them off (its own ``with`` block or
    decorator is then the place, `grad_disabled_at`); the backward's own line at the top of the script."""
    running = fact.detail.get("grad_off", ())
    if not running:
        return None
    off = grad_disabled_at(running[0])
    if off is not None:
        return off.site
    return running[1] if len(running) > 1 else running[0]


def graphless_words(fact: AutogradError, name: str, call: str, said: str) -> tuple[str, str]:
    """What happened and the fix, for the first of those causes the run's facts show."""
    if under_inference_mode(fact) is not None:
        what = f"`{name}`" if name != "backward()" else "its output"
        return (f"this line runs under torch.inference_mode(), so backward(){call} inside it found {what} "
                f"without grad_fn: inference mode records no graph, even inside torch.enable_grad(){said}.",
                "run it under torch.no_grad() instead of torch.inference_mode() (enable_grad() can turn "
                "recording back on there), or outside both if it needs gradients.")
    if fact.detail.get("owner_made") is not None:
        what = f"`{name}`" if name != "backward()" else "its output"
        return (f"backward(){call} ran under torch.inference_mode(), which the library code of the object made here "
                f"turned on (Lightning's Trainer runs test, validate and predict so), and which torch.enable_grad() "
                f"cannot turn off: {what} was computed without grad_fn{said}.",
                "make this object run those loops without inference mode (Lightning: pl.Trainer(..., "
                "inference_mode=False), which uses torch.no_grad() instead, under which enable_grad() works), or "
                "compute the gradient outside its loops.")
    if inference_entered(fact) is not None:
        what = f"`{name}`" if name != "backward()" else "its output"
        return (f"this line entered torch.inference_mode(), and backward(){call}, which ran inside that block, found "
                f"{what} without grad_fn: inference mode records no graph, even inside torch.enable_grad(){said}.",
                "enter torch.no_grad() here instead of torch.inference_mode() (enable_grad() can turn recording back "
                "on inside it), or compute the gradient outside the block.")
    what = f"`{name}`" if name != "backward()" else "its loss"
    hook = fact.detail.get("in_hook")
    if hook is not None:
        return (f"this line runs in {hook}(), inside a hook autograd called during the backward at "
                f"{fact.detail['outer']}, and autograd runs hooks with gradients off: what it computes from values "
                f"that require grad has no graph, so backward(){call} on {what} was refused{said}.",
                "compute it under `with torch.enable_grad():` inside the hook (or call the outer backward with "
                "create_graph=True, which keeps recording on while its hooks run).")
    running = fact.detail.get("grad_off", ())
    if running:
        off = next((found for found in map(grad_disabled_at, running) if found is not None), None)
        where = f" (by `{off.statement}` at {off.site})" if off is not None else " (by a library's code that called it)"
        return (f"backward(){call} ran with gradients turned off{where}, so {what} was computed without a graph: "
                f"PyTorch refused the backward{said}.",
                "run this call under `with torch.enable_grad():` (it turns recording back on inside torch.no_grad()), "
                "or call it outside the block that turned gradients off.")
    function = fact.detail.get("forward_of")
    if function is not None:
        return (f"this line runs inside {function}.forward, and a custom autograd.Function's forward always runs "
                f"with gradients off: {what} was computed here without a graph, so backward(){call} was "
                f"refused{said}.",
                "compute it under `with torch.enable_grad():` inside forward, from inputs taken with .detach() (so "
                "that this backward stays inside forward), or run this optimisation outside the Function.")
    if fact.detail.get("frozen"):
        return (f"this line switched off requires_grad of {fact.detail['last']}, and by the time backward(){call} "
                f"ran all {fact.detail['frozen']} parameters were frozen: {what} was computed from none that "
                f"requires grad, so PyTorch refused the backward{said}.",
                "freeze only the part meant to stay fixed: this branch should leave its parameters trainable "
                "(requires_grad = True), or unfreeze the head before training.")
    if fact.detail.get("bound_here"):
        return (f"this line computes {what} from values none of which requires grad (no parameter, no leaf made with "
                f"requires_grad=True, and no cut the trace saw), so backward(){call} on it was refused{said}.",
                "compute it from the output of the model being trained (the forward that uses its parameters), not "
                "from the inputs or targets alone; if everything is frozen on purpose, do not call backward().")
    return (f"backward() was called on {what}, which does not require grad and has no grad_fn: nothing it was "
            f"computed from requires grad, and no cut the trace saw explains why{said}.",
            "compute it from tensors that require grad (the model's parameters, or leaves made with "
            "requires_grad=True), outside torch.no_grad() and inference_mode(); if everything is frozen on "
            "purpose, do not call backward().")
