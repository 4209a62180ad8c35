"""`no_grad`: computation on the path ran with gradients disabled.

The message names the statement that turned gradients off when it is in the line's own function
(`judge/grad_mode_site.py`); when it is not, but a caller's line runs inside a ``with torch.no_grad():``
(an attack or a training step called from an evaluation loop), the finding goes to that call, the line to
change, with the inner line as ``used``. The fix differs for an update step that rebuilt a watched leaf
(``w = w - lr * w.grad``: the recorder marks a result shaped like the leaf it came from, and the op adds a
step to it) and for any other computation."""
from __future__ import annotations

from gradcheck_l2c.judge.grad_mode_site import GradOff, grad_disabled_at
from gradcheck_l2c.record.facts import Event, LibraryCall, Site

KIND = "no_grad"

# ops that add a step to a leaf, as an update rule does (``w - lr * w.grad``, ``torch.addcdiv``, ``lerp``)
_UPDATES = frozenset(("sub", "add", "rsub", "__sub__", "__add__", "__rsub__", "__radd__", "addcmul", "addcdiv",
                      "lerp"))


def describe(event: Event, tensor: str) -> tuple[str, str]:
    if event.extra.get("function"):
        return _function(event, tensor)
    call = _caller_under_no_grad(event)
    drawn = event.sampled_by
    if drawn and call is None:
        return (f"`{drawn}()`, called here, draws its values under torch.no_grad(): the sample carries no gradient "
                f"back to {tensor}, whatever it was computed from.", _library_fix(drawn))
    if event.extra.get("kept") and call is not None:
        return _kept(event, tensor, call[1])
    if call is not None and call[1].form == "decorator":
        off = call[1]
        return (
            f"`{event.detail}` at {event.site} ran with gradients disabled on values computed from {tensor}: the "
            f"function decorated `{off.statement}` at {off.site} turns them off for everything it runs, so its "
            "result has no history.",
            "call a function that runs with gradients here, turn them back on around it (`with torch.enable_grad():`),"
            f" or remove `{off.statement}` (line {off.site.line}) where gradients are needed.",
        )
    if call is not None:
        caller, off = call
        return (
            f"`{event.detail}` at {event.site} ran with gradients disabled on values computed from {tensor}: the "
            f"function was called here, inside `{off.statement}` at {off.site}, so its result has no history.",
            f"call it outside the `{off.statement}` block (line {off.site.line}), or turn gradients back on where "
            "it needs them (`with torch.enable_grad():` inside the function, as attacks and training steps do).",
        )
    off = grad_disabled_at(event.site)
    entered = _library_under_no_grad(event) if off is None else None
    if entered is not None:
        library, off = entered
        return (
            f"`{event.detail}` at {event.site} ran with gradients disabled on values computed from {tensor}: "
            f"`{library.function}`, called here, runs it under `{off.statement}` ({off.site}), so its result has "
            "no history.",
            _library_fix(library.function),
        )
    if _left_off(event) is not None:
        return (
            f"`{event.detail}` at {event.site} ran with gradients disabled on values computed from {tensor}: "
            "`torch.set_grad_enabled(False)`, called here and not as a `with` block, turned them off for every line "
            "after it, and nothing turned them back on, so its result has no history.",
            "put what needs no gradients under `with torch.no_grad():` (or `with torch.set_grad_enabled(False):`), "
            "or call `torch.set_grad_enabled(True)` before training.",
        )
    how = f"by `{off.statement}` at {off.site}" if off is not None else \
        "(torch.no_grad / inference_mode / set_grad_enabled(False))"
    if event.extra.get("rebuilds") and event.detail in _UPDATES:
        return (
            f"`{event.detail}` ran with gradients disabled {how} on {tensor} and made a new tensor of its "
            "shape without history; a name rebound to it no longer refers to the leaf that learns.",
            "update the leaf in place under no_grad: `w -= lr * w.grad` (or w.sub_(lr * w.grad)), "
            "not `w = w - lr * w.grad`; or let an optimizer step it.",
        )
    return (
        f"`{event.detail}` ran with gradients disabled {how} on values computed from {tensor}, "
        "so its result has no history.",
        _fix(off),
    )


def _function(event: Event, tensor: str) -> tuple[str, str]:
    """A custom autograd Function used the tensor inside its forward without taking it as an input."""
    function = event.detail.rpartition(".")[0]
    if function == "CheckpointFunction":
        return (
            f"the reentrant checkpoint ran its function without gradients and none of its inputs required grad, "
            f"so the result has no history and {tensor}, used inside, gets no gradient (PyTorch warns \"None of "
            "the inputs have requires_grad=True\").",
            "pass use_reentrant=False to checkpoint(), or make an input require grad (the output of a frozen "
            "embedding: .requires_grad_(True); in transformers: model.enable_input_require_grads()).",
        )
    return (
        f"the custom autograd Function `{function}` used {tensor} in its forward without taking it as an input: "
        "autograd gives gradients through a Function only to its inputs.",
        f"pass {tensor} to {function}.apply(...) as an input and return its gradient from backward(), or compute "
        "this part outside the Function with differentiable torch ops.",
    )


def _kept(event: Event, tensor: str, off: GradOff) -> tuple[str, str]:
    """A module kept a value this call computed with gradients off, and a loss was later computed from it."""
    attribute = event.extra["kept"]
    return (f"this call runs inside `{off.statement}` at {off.site}, and `{event.detail}` at {event.site} kept what it "
            f"computed from {tensor} on the module as `{attribute}`; a loss computed later from the kept value had "
            "no graph, so backward() was refused.",
            f"clear `{attribute}` before training resumes (set it to None where the module switches back to train(), "
            "or after this call), or do not keep values computed with gradients off on the module.")


def related(event: Event) -> dict[str, Site | None]:
    """The statement that disabled gradients, as its own place in every output format (and, for a caller's
    block, the line inside the function that ran without gradients)."""
    if event.extra.get("function"):
        return {}
    call = _caller_under_no_grad(event)
    if call is not None:
        return {"disabled": call[1].site, "used": event.site}
    off = grad_disabled_at(event.site)
    entered = _library_under_no_grad(event) if off is None else None
    if entered is not None:
        return {"disabled": entered[1].site, "used": event.site}
    if _left_off(event) is not None:
        return {"used": event.site}
    return {"disabled": off.site if off is not None else None}


def place(event: Event) -> Site | None:
    """The line to change: the cut's own line, or the call made inside a caller's no_grad block."""
    if event.extra.get("function"):
        return event.site
    call = _caller_under_no_grad(event)
    if call is not None:
        return call[0]
    left_off = _left_off(event)
    if left_off is not None or grad_disabled_at(event.site) is not None:
        return left_off or event.site
    entered = _library_under_no_grad(event)
    return entered[0].caller if entered is not None else event.site


def _caller_under_no_grad(event: Event) -> tuple[Site, GradOff] | None:
    """When the cut's own function does not turn gradients off, the innermost caller line that runs inside a
    block that does, and that block. Under a decorator (the cut's own function's or a caller's): the call into the
    decorated function where that function was handed a tensor that requires grad (a pipeline given the tensor to
    optimise, a helper given log-probs), else the line in it."""
    callers = event.extra.get("callers", ())
    handed = event.extra.get("handed", ())  # the cut's own function first, then the callers' functions
    own = grad_disabled_at(event.site)
    if own is not None:
        return (callers[0], own) if own.form == "decorator" and handed[:1] == (True,) and callers else None
    for depth, caller in enumerate(callers):
        off = grad_disabled_at(caller)
        if off is None or off.form == "call":
            continue
        if off.form == "decorator" and depth + 1 < len(handed) and handed[depth + 1] and depth + 1 < len(callers):
            return callers[depth + 1], off
        return caller, off
    return None


def _library_under_no_grad(event: Event) -> tuple[LibraryCall, GradOff] | None:
    """When neither the cut's function nor a user caller turned gradients off: the innermost library function on
    the way that did around the user code it ran (``Distribution.sample``'s ``with torch.no_grad():`` around a
    flow's transforms), and the user line that called into it. None while a user caller's own block explains it."""
    if _caller_under_no_grad(event) is not None:
        return None
    for call in event.extra.get("library", ()):
        off = grad_disabled_at(call.inside)
        if off is not None and off.form != "call":
            return call, off
    return None


def _switched_off(event: Event) -> Site | None:
    """The line of a plain ``torch.set_grad_enabled(False)`` call (no ``with``) that left gradients off for the cut,
    when no ``with`` block or decorator, the user's or a library's, explains it."""
    if _caller_under_no_grad(event) is not None or _library_under_no_grad(event) is not None:
        return None
    return event.extra.get("switched")


def _left_off(event: Event) -> Site | None:
    """The plain ``torch.set_grad_enabled(False)`` call that left gradients off for the cut, as the run recorded it:
    elsewhere (an import's setup, a helper), or before the line in its own function, where no ``with`` block or
    decorator turned them off around the line, and no later call of that function turns them back on (a switch left
    off for good: the one line to change; one undone below the line brackets it, and the line is the one to move)."""
    switched = _switched_off(event)
    if switched is None:
        return None
    off = grad_disabled_at(event.site)
    return switched if off is None or (off.form == "call" and off.site == switched and not off.turned_back_on) \
        else None


def _library_fix(function: str) -> str:
    """How to keep gradients through a library function that turns them off."""
    if function.rpartition(".")[2] == "sample":
        return ("draw with `rsample()`, the reparameterised sample that keeps gradients (`sample()` runs under "
                "no_grad on purpose), or compute the value outside this call where gradients are on.")
    return ("call a function of the library that keeps gradients (its training entry point), or compute the value "
            "outside this call, where gradients are on.")


def _fix(off: GradOff | None) -> str:
    if off is None:
        return ("run this line with gradients enabled: call this code outside the torch.no_grad() / "
                "inference_mode() block or @torch.no_grad() decorator it runs under (keep no_grad for "
                "evaluation and parameter updates).")
    if off.form == "decorator":
        return (f"remove `{off.statement}` from this function (line {off.site.line}), or call the function "
                "only where no gradient is needed (evaluation).")
    if off.form == "with":
        return (f"move this line out of the `{off.statement}` block (line {off.site.line}); keep no_grad for "
                "evaluation and parameter updates.")
    return (f"turn gradients back on before this line (torch.set_grad_enabled(True)), or move the "
            f"`{off.statement}` at line {off.site.line} after it.")
