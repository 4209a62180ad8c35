"""`autograd_error`: PyTorch refused a backward (or an op, for the graph's sake), and no other finding says why.

Every RuntimeError a traced ``backward()``/``torch.autograd.grad()`` raised is a fact of the record, kept
even when the script caught it; so are the autograd errors ops raise in forward (an in-place write into a
leaf or into one of several views an op returned, an inference tensor saved for backward, ``deepcopy`` of a
tensor with history). Each becomes one error at the line to change when the run's facts name it (the line
that made the value an earlier backward freed, the non-scalar loss, the inference tensor, the ``return`` of
a custom backward, the attribute that keeps a graph tensor), with PyTorch's call as the symptom; refusals
another finding already explains (`inplace_saved`, the cuts of a graphless loss, DDP's unused parameters) are left to it.
"""
from __future__ import annotations

from gradcheck_l2c.judge.freed_graph import freed_graph_words
from gradcheck_l2c.judge.graphless import graphless_words, inference_entered, under_grad_off, under_inference_mode
from gradcheck_l2c.judge.view_writes import (detach_view_words, function_view_words, inplace_leaf_words,
                                             multi_view_words, nograd_view_words)
from gradcheck_l2c.judge.grad_mode_site import grad_disabled_at
from gradcheck_l2c.record.facts import AutogradError, Graphless, Site, StaleSaved
from gradcheck_l2c.records import Finding

KIND = "autograd_error"
_SAYS = "PyTorch: "


def scan(run) -> list[Finding]:
    found = []
    for fact in run.record.autograd_errors:
        if _explained(run, fact):
            continue
        name = run.name(fact.key) if fact.key is not None else fact.subject
        message, fix = words(fact, name)
        where = _differentiated_again(run, fact) or place(fact)
        # gradients were off because a library object's loop turned inference mode on, or a caller turned them off
        # around the backward: a no_grad cut, made there
        kind = "no_grad" if where is not None and (where == fact.detail.get("owner_made") or
                                                   where == inference_entered(fact) or where == under_grad_off(fact) or
                                                   (fact.detail.get("in_hook") and where == fact.cause)) else KIND
        found.append(run.finding(kind, "error", name, where, message, fix, fact.count,
                                 related={"symptom": fact.call, "defined": fact.detail.get("inner")}))
    return found


def note(fact: AutogradError) -> str | None:
    """The note added to PyTorch's error: the line to change, what happened there, and the fix."""
    if fact.category in ("ddp", "other", "inplace_saved") or (fact.category == "graphless" and under_inference_mode(
            fact) is None and not fact.detail.get("frozen") and not fact.detail.get("forward_of")
            and not fact.detail.get("owner_made") and not fact.detail.get("entered")
            and not fact.detail.get("bound_here")
            and not fact.detail.get("grad_off") and not fact.detail.get("in_hook")):
        return None  # nothing the trace adds to the message itself (the graphless and in-place notes are elsewhere)
    message, fix = words(fact, fact.subject)
    where = place(fact)
    return f"gradcheck-l2c: {where}: {message}\n  fix: {fix}" if where is not None else \
        f"gradcheck-l2c: {message}\n  fix: {fix}"


def place(fact: AutogradError) -> Site | None:
    """The line to change: a caller's ``with torch.inference_mode():`` around the making of an inference tensor
    saved for backward; else the recorded cause; for a backward refused inside ``torch.inference_mode()``, the
    innermost running line under the ``inference_mode`` that turned recording off, the line that made the library
    object whose method turned it on, or the line that entered it; else PyTorch's call."""
    return (_inference_block(fact) or fact.cause or under_inference_mode(fact) or fact.detail.get("owner_made")
            or inference_entered(fact) or under_grad_off(fact) or fact.call)


def _differentiated_again(run, fact: AutogradError) -> Site | None:
    """For a backward that differentiated a ``@once_differentiable`` backward a second time: the latest line that took
    gradients with ``create_graph=True`` which a backward then ran through (a surface normal used in the loss); that
    derivative went through the Function."""
    if fact.category != "once_differentiable":
        return None
    taken = run.record.taken_gradients
    used = [gradient for gradient in taken if gradient.used] or taken
    return used[-1].site if used else None


def _inference_block(fact: AutogradError) -> Site | None:
    """For an inference tensor saved for backward, made in a function called under a caller's ``with
    torch.inference_mode():`` block, that block's line: the calls under it made every tensor of it an
    inference tensor. None when the block is in the making line's own function (the line is the one to
    change) or when a decorator turned inference mode on (the making line stays the one named)."""
    made = fact.detail.get("made", ()) if fact.category == "inference_saved" else ()
    for depth, site in enumerate(made):
        off = grad_disabled_at(site)
        if off is not None:
            return off.site if depth and off.form == "with" else None
    return None


def _explained(run, fact: AutogradError) -> bool:
    """Another finding names this refusal's cause: the in-place write a saved tensor was changed by, the
    cuts that left a loss without graph or an input of ``autograd.grad`` unused, DDP's waiting for an unused
    parameter."""
    failure = fact.failure
    if fact.category == "ddp":
        return True
    if isinstance(failure, StaleSaved) and failure.writer is not None:
        return True
    if fact.category not in ("graphless", "inplace_saved", "unused_input"):
        return False
    sites = {(site.file, site.line) for site, *_ in failure.cuts if site is not None} \
        if isinstance(failure, Graphless) else set()
    call = (fact.call.file, fact.call.line) if fact.call is not None else None
    return any(f.severity == "error" and f.kind != KIND and ((f.file, f.line) in sites or any(
        place.role == "symptom" and (place.file, place.line) == call for place in f.related)) for f in run.findings)


def words(fact: AutogradError, name: str) -> tuple[str, str]:
    """What happened, in one sentence with why it matters, and the change to make at the finding's line."""
    said = f' ({_SAYS}"{_sentence(fact.message)}")'
    call = f" at {fact.call}" if fact.call is not None else ""
    wording = _WORDING.get(fact.category, _other)
    return wording(fact, name, call, said)


def _non_scalar(fact: AutogradError, name: str, call: str, said: str) -> tuple[str, str]:
    what = "the value made on this line" if fact.cause is not None else f"`{name}`"
    dtype = str(fact.detail.get("dtype", ""))
    if dtype and not any(word in dtype for word in ("float", "double", "half", "bfloat")):
        return (f"backward(){call} was called on {what}, which holds {dtype} values: a gradient needs floating "
                f"point numbers{said}.",
                "compute the loss in floating point (from the model's float outputs, or .float() the inputs of "
                "the loss), not from integer or boolean values.")
    shape = tuple(fact.detail.get("shape", ()))
    size = 1
    for dim in shape:
        size *= dim
    held = f"has shape {shape} ({size} values)" if shape else "has more than one value"
    where = "on this line" if fact.cause is not None else f"where it is made, or call {name}.mean().backward()"
    return (f"{what} {held}, and backward(){call} was called on it without a gradient argument; backward starts "
            f"from a single value (the loss){said}.",
            f"reduce it to one value {where} (.mean() or .sum() over the batch), or pass "
            "gradient=torch.ones_like(...) to backward() if the sum of its values is meant.")


def _inference(fact: AutogradError, name: str, call: str, said: str) -> tuple[str, str]:
    op = fact.detail.get("op", "an op")
    fix = ("use torch.no_grad() instead of torch.inference_mode() for this computation (its results can be used "
           "in training later), or .clone() the result outside inference mode before training on it.")
    block = _inference_block(fact)
    if block is not None:
        made = fact.cause.line if fact.cause is not None and fact.cause.file == block.file else None
        where = f" (at line {made})" if made is not None else ""
        return (f"the calls under this torch.inference_mode() block made inference tensors, and one of them{where}"
                f" is used in training: `{op}`{call} saves it for backward, which PyTorch refuses for inference "
                f"tensors{said}.", "use torch.no_grad() instead of torch.inference_mode() here: what is computed "
                "under it (a cache, calibrated scales, features) can then be used in training.")
    if fact.cause is not None and fact.cause != fact.call:
        return (f"the tensor made on this line under torch.inference_mode() is used in training: `{op}`{call} "
                f"saves it for backward, which PyTorch refuses for inference tensors{said}.", fix)
    return (f"`{op}` saves for backward a tensor made under torch.inference_mode(), which PyTorch refuses for "
            f"inference tensors{said}.", fix)


def _unused_input(fact: AutogradError, name: str, call: str, said: str) -> tuple[str, str]:
    output = fact.detail.get("output")
    output = "the outputs were" if output in ("backward()", None) else f"`{output}` was"
    if "copy_made" in fact.detail:
        return (f"torch.autograd.grad{call} was asked for the gradient of {name}, but {output} computed from a copy "
                f"of it that copy.deepcopy made here: a deep copy's parameters are new leaves, with no path back to "
                f"the originals{said}.",
                "compute the outputs from the original tensors (run the model on them with "
                "torch.func.functional_call(model, params, inputs), keeping the inner steps' results in a dict), or "
                "ask for the copy's gradients and apply them to the original (a first-order update).")
    return (f"torch.autograd.grad was asked for the gradient of {name}, which {output} not computed from "
            f"(no path in their graph leads to it){said}.",
            "pass the tensor the outputs were computed from (not a copy, nor a tensor rebound after the forward), "
            "or compute the outputs from it after it requires grad; pass allow_unused=True (and "
            "materialize_grads=True for zeros) if no gradient is expected.")


def _input_no_grad(fact: AutogradError, name: str, call: str, said: str) -> tuple[str, str]:
    if fact.detail.get("frozen_inputs"):
        return (f"the backward(){call} ran a custom autograd.Function (a reentrant gradient checkpoint) whose backward "
                f"asks torch.autograd.grad for the gradients of its module's parameters, and {fact.detail['last']} "
                f"(one of {fact.detail['frozen_inputs']} switched off here) does not require grad{said}.",
                "pass the checkpoint only the parameters that require grad ([p for p in module.parameters() if "
                "p.requires_grad]), or checkpoint with torch.utils.checkpoint(..., use_reentrant=False), which skips "
                "inputs without grad; or leave these parameters trainable here.")
    return (f"torch.autograd.grad was asked for the gradient of {name}, which does not require grad{said}.",
            f"make {name} require grad before the outputs are computed from it (.requires_grad_() or "
            "requires_grad=True), or leave it out of inputs.")


def _function_backward(fact: AutogradError, name: str, call: str, said: str) -> tuple[str, str]:
    function = fact.detail.get("function") or fact.detail.get("node") or "a custom autograd.Function"
    if "expected" in fact.detail:
        expected, got = fact.detail["expected"], fact.detail["got"]
        return (f"{function}.backward returns {got} gradient{'s' if got != 1 else ''} here, but its forward took "
                f"{expected} inputs: autograd needs one gradient per forward input, so backward(){call} "
                f"failed{said}.",
                "return one value per input of forward, in order, with None for inputs that need no gradient "
                "(e.g. return grad_a, grad_b, None).")
    if "not a Variable" in fact.message:
        return (f"{function}.backward returns a gradient for a forward input that is not a tensor, so "
                f"backward(){call} failed{said}.",
                "return None at the positions of forward inputs that are not tensors.")
    return (f"{function}.backward returns a gradient whose shape does not match its forward input, so "
            f"backward(){call} failed{said}.",
            "return each gradient with the shape of its forward input (sum over broadcast dimensions, "
            ".sum(dim, keepdim=True), or .view the result).")


def _no_backward(fact: AutogradError, name: str, call: str, said: str) -> tuple[str, str]:
    function = fact.detail.get("function", "a custom autograd.Function")
    return (f"{function} defines forward but no backward, so backward(){call} cannot pass gradients through it "
            f"to the tensors its inputs came from{said}.",
            f"give {function} a @staticmethod backward(ctx, *grads) returning one gradient per forward input "
            "(None where none is needed), or compute its forward with differentiable torch ops outside a Function.")


def _no_derivative(fact: AutogradError, name: str, call: str, said: str) -> tuple[str, str]:
    op = f"`{fact.detail['op']}`" if fact.detail.get("op") else "an op"
    where = "made on this line" if fact.cause is not None else "on its path"
    return (f"{op}, {where}, has no derivative in PyTorch: backward(){call} reached it and raised, so no gradient "
            f"of that pass arrived{said}.",
            f"make this value with ops PyTorch differentiates (often a keyword of the call that builds it does what "
            f"{op} did), or give {op} only values that need no gradient (detached, or under torch.no_grad()).")


def _numpy_requires_grad(fact: AutogradError, name: str, call: str, said: str) -> tuple[str, str]:
    return (f"NumPy was given {name}, which requires grad: a NumPy array cannot carry autograd history, so "
            f"PyTorch refused the conversion{said}.",
            "give NumPy numbers or detached arrays: loss.item() where the values are collected, or "
            "t.detach().cpu().numpy(); keep the tensor (torch.stack, torch.sum) where it must stay differentiable.")


def _hook_no_grad(fact: AutogradError, name: str, call: str, said: str) -> tuple[str, str]:
    return (f"register_hook was called on {name}, which does not require grad (a frozen parameter), so PyTorch "
            f"refused the hook{said}.",
            "register gradient hooks only on tensors that require grad (`if param.requires_grad:`), or unfreeze "
            "the parameter before registering its hook.")


def _hook_result(fact: AutogradError, name: str, call: str, said: str) -> tuple[str, str]:
    what = {"size": "a gradient of another shape than", "type": "a gradient of another dtype or device than",
            "count": "another number of gradients than"}[fact.detail.get("changed", "size")]
    return (f"the hook {fact.detail.get('hook', '')} returns {what} what it replaces, so backward(){call} failed{said}.",
            "return what the hook receives, slot by slot, changing only values (a layer without bias has no slot "
            "for it), or use register_full_backward_hook, whose grad_input holds only the inputs' gradients.")


def _retain_grad_no_grad(fact: AutogradError, name: str, call: str, said: str) -> tuple[str, str]:
    return (f"retain_grad() was called on {name}, which does not require grad (computed only from values without "
            f"gradient history: detached, made under no_grad, or never requiring grad), so PyTorch refused it{said}.",
            "call retain_grad() only where the value requires grad (`if t.requires_grad: t.retain_grad()`), or "
            "compute it from tensors that require grad if its gradient is wanted.")


def _deepcopy(fact: AutogradError, name: str, call: str, said: str) -> tuple[str, str]:
    return (f"{name} is set on this line to a tensor with autograd history (not a leaf), and copy.deepcopy{call} "
            f"cannot copy such tensors{said}.",
            "keep the intermediate in a local variable, or store .detach() of it if it is needed later (or set "
            "the attribute to None before deepcopy).")


def _inplace_saved(fact: AutogradError, name: str, call: str, said: str) -> tuple[str, str]:
    saver = getattr(fact.failure, "saver", "an operation")
    return (f"backward() failed because {saver} saved a tensor for it that was then changed in place, by a write "
            f"the trace did not see{said}.",
            "find the in-place write into that tensor between the forward and this backward (x += ..., "
            "x[...] = ..., inplace=True, a method ending in _) and make it out of place, or .clone() the tensor "
            "first; torch.autograd.set_detect_anomaly(True) names the forward op that saved it.")


def _gradient_shape(fact: AutogradError, name: str, call: str, said: str) -> tuple[str, str]:
    return (f"the gradient passed to backward() does not have the shape of `{name}`{said}.",
            "pass gradient= with the shape of the tensor backward() is called on (torch.ones_like(it)), or "
            "reduce that tensor to one value and call backward() without a gradient.")


def _requires_grad_non_leaf(fact: AutogradError, name: str, call: str, said: str) -> tuple[str, str]:
    if fact.detail.get("carried"):
        return (f"the value computed on this line from `{name}` keeps its history into the next pass, where "
                f"`{name}.requires_grad = True`{call} is refused: only a leaf's flag can change, and it is now the "
                f"result of an operation{said}.",
                "end the update with .detach() on this line (x = (x + step).detach()), so each pass starts "
                "from a new leaf.")
    if fact.detail.get("elsewhere"):
        return (f"this line makes a result of an operation (not a leaf), whose `.requires_grad = True`{call} is "
                f"refused: only a leaf's flag can change{said}.",
                "make the leaf after the operation: convert first, then ask for gradients "
                "(torch.randn(...).type_as(data).requires_grad_()), or hand on the leaf itself.")
    return (f"`{name}` is the result of an operation, not a leaf, so its requires_grad flag cannot be "
            f"changed{said}.",
            f"make a new leaf here: {name} = {name}.detach().requires_grad_(True) (for a gradient with respect "
            f"to it), or set requires_grad on the leaf it is computed from.")


def _out_requires_grad(fact: AutogradError, name: str, call: str, said: str) -> tuple[str, str]:
    op = fact.detail.get("op", "an op")
    return (f"`{op}` was given out= while {name} or another argument requires grad and grad mode was on: functions "
            f"that write into out= are not differentiable, so PyTorch refused the call{said}.",
            "to initialise a parameter, write under `with torch.no_grad():` (as nn.init does); to differentiate "
            "the result, drop out= and use the tensor the function returns.")


def _resize_requires_grad(fact: AutogradError, name: str, call: str, said: str) -> tuple[str, str]:
    return (f"{name} requires grad, and autograd cannot record a change of its size, so PyTorch refused "
            f"resize_{said}.",
            "build a tensor of the new size out of place (torch.cat, F.pad, new_zeros), or resize under "
            "`with torch.no_grad():` before it takes part in a loss.")


def _dtype_requires_grad(fact: AutogradError, name: str, call: str, said: str) -> tuple[str, str]:
    return (f"{name} holds integers or booleans, which have no gradient, so PyTorch refused to make it require "
            f"grad{said}.",
            "make it a float tensor (dtype=torch.float32, or .float() before requires_grad_()); indices and labels "
            "need no gradient.")


def _legacy_function(fact: AutogradError, name: str, call: str, said: str) -> tuple[str, str]:
    function = fact.detail.get("op") or "this Function"
    return (f"this line calls an instance of {function}, an old-style autograd.Function (forward and backward written "
            f"as instance methods), which PyTorch no longer runs: nothing passes through it, and no gradient{said}.",
            f"make {function}.forward(ctx, ...) and backward(ctx, ...) @staticmethods (store on ctx in forward what "
            f"__init__ kept, and return None as its gradient from backward), and call {function}.apply(...) instead "
            "of an instance.")


def _once_differentiable(fact: AutogradError, name: str, call: str, said: str) -> tuple[str, str]:
    return (f"backward(){call} differentiated a gradient taken with create_graph=True a second time, and that gradient "
            f"went through a custom autograd.Function whose backward is marked @once_differentiable: its backward "
            f"builds no graph to differentiate{said}.",
            "take this derivative another way where it must be differentiated again (finite differences, or a "
            "Function whose backward uses differentiable torch ops, without @once_differentiable), or leave it out of "
            "the loss (create_graph=False) if it is only looked at.")


def _other(fact: AutogradError, name: str, call: str, said: str) -> tuple[str, str]:
    if fact.cause is not None:
        return (f"this line raised inside backward(){call}, which then stopped before any gradient of that pass "
                f"arrived{said}.", "fix what PyTorch's message names on this line; the backward did not finish.")
    return (f"backward() raised, so no gradient of that pass arrived{said}.",
            "fix what PyTorch's message names; the backward did not finish.")


_WORDING = {
    "freed_graph": freed_graph_words, "non_scalar_root": _non_scalar, "inplace_leaf": inplace_leaf_words,
    "inference_saved": _inference, "unused_input": _unused_input, "input_no_grad": _input_no_grad,
    "function_backward": _function_backward, "function_no_backward": _no_backward, "no_derivative": _no_derivative,
    "numpy_requires_grad": _numpy_requires_grad, "hook_no_grad": _hook_no_grad,
    "retain_grad_no_grad": _retain_grad_no_grad, "hook_result": _hook_result, "deepcopy_non_leaf": _deepcopy, "graphless": graphless_words,
    "inplace_saved": _inplace_saved, "gradient_shape": _gradient_shape,
    "requires_grad_non_leaf": _requires_grad_non_leaf, "inplace_multi_view": multi_view_words,
    "out_requires_grad": _out_requires_grad, "resize_requires_grad": _resize_requires_grad,
    "dtype_requires_grad": _dtype_requires_grad, "inplace_nograd_view": nograd_view_words,
    "inplace_function_view": function_view_words, "detach_view": detach_view_words, "once_differentiable": _once_differentiable,
    "legacy_function": _legacy_function,
}


def _sentence(message: str) -> str:
    """PyTorch's first sentence (its messages go on with advice the fix already gives)."""
    cut = message.find(". ")
    sentence = message[:cut] if cut > 0 else message.rstrip(".")
    return sentence if len(sentence) <= 160 else sentence[:157] + "..."
