"""Autograd's own errors, as facts: every RuntimeError a traced ``backward()`` or ``torch.autograd.grad()`` raised,
and the autograd errors an op raises in forward (an in-place write into a leaf that requires grad or into one of
several views an op returned, an inference tensor saved for backward, ``deepcopy`` of a tensor with history). Each
is kept when it is raised, so a script that catches it and goes on still has it judged.

A fact holds the user line that made the call, PyTorch's message, its category, and, where the run's facts tell it
(the graph, the tensors, the calls; never the script's text), the line to change: the node of an earlier, freed graph
this backward reached and the line that made it (or reset it in place), the line that made a non-scalar root or an
inference tensor, the ``return`` of a custom Function's backward, the line that stored a graph tensor on a module.
"""
from __future__ import annotations

import sys
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import torch

from gradcheck_l2c.record import graph
from gradcheck_l2c.record.args import leaf_with_grad, op_label, tensors_in
from gradcheck_l2c.record.code_lines import last_binding, stores_attribute
from gradcheck_l2c.record.error_categories import IN_FORWARD, classify, multiple_views
from gradcheck_l2c.record.failures import BackwardFailure
from gradcheck_l2c.record.freed_values import taken_in
from gradcheck_l2c.record.function_sites import function_backward_site, missing_backward_site, view_return_site
from gradcheck_l2c.record.hook_refusals import HookRefusal
from gradcheck_l2c.record.hook_results import hook_result_site
from gradcheck_l2c.record.kept_states import detached_beside, reset_in_place
from gradcheck_l2c.record.locations import Site, user_frame, user_site
from gradcheck_l2c.record.names import resolve_names, variable_name
from gradcheck_l2c.record.origins import Origins, running_frames
from gradcheck_l2c.record.refusal_sources import (copy_used, graphless_cause, last_frozen, library_owner_made,
                                                   made_elsewhere, multi_view_source, raised_in, underived_site)
from gradcheck_l2c.record.scope import Scope
from gradcheck_l2c.record.source_sites import attribute_site
from gradcheck_l2c.record.stacks import user_stack
from gradcheck_l2c.record.torch_internals import SAVED_PREFIX, function_class, functions_off, output_shape, sequence_nr
from gradcheck_l2c.record.watch import WatchRegistry
from gradcheck_l2c.record.writes import WriteLog

Tensor = torch.Tensor

_FREED = "already been freed"
_WALK = 2_000  # nodes looked at below the freed boundary to confirm the graph there was freed
_CHECKS = 16  # boundaries looked at
_OUT_OF_MEMORY = getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError)


@dataclass
class AutogradError:
    """A RuntimeError autograd raised: by a backward or autograd.grad called at ``call``, or by an op there.

    ``cause`` is the line to change where the run's facts tell it (None: the call itself); ``subject``
    names what it is about (a variable, a module attribute, a node); ``key`` is the watched tensor it is
    about, if any; ``detail`` holds the category's facts (shapes, the op, the node, the Function, the
    backward that freed a graph); ``failure`` the in-place or graphless facts of those categories."""

    category: str
    message: str  # PyTorch's message, first line
    call: Site | None
    cause: Site | None
    subject: str
    key: int | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    failure: BackwardFailure | None = None
    count: int = 1
    reaches: frozenset[int] = frozenset()  # the watched leaves a refused backward's graph reaches (it was for them)


#: The custom Function through which torch passes the output of a module with a full backward hook.
_HOOKED = "BackwardHookFunction"


class ErrorRecorder:
    """Turns autograd's errors into `AutogradError` facts, one per category and place, counted."""

    def __init__(self, registry: WatchRegistry, origins: Origins, scope: Scope, stepped: list[set[int]],
                 writes: WriteLog) -> None:
        self.registry, self.origins, self.scope, self.writes = registry, origins, scope, writes
        self.stepped = stepped  # the keys of each optimizer that stepped since the last backward ended (kept by it)
        self.errors: dict[tuple[Any, ...], AutogradError] = {}

    def backward(self, error: RuntimeError, roots: list[Tensor], call: Site | None, failure: BackwardFailure | None,
                 inputs: Any = None, in_hook: HookRefusal | None = None) -> AutogradError | None:
        """A backward or autograd.grad called at ``call`` raised ``error`` (``in_hook``: a backward inside its hook)."""
        if isinstance(error, _OUT_OF_MEMORY):
            return None  # memory, not the graph
        text = str(error)
        category = classify(text)
        frame = user_frame(1)
        root = roots[0] if roots else None
        subject = (variable_name(frame, root) if frame is not None and root is not None else None) or "backward()"
        cause, key, detail = None, None, {}
        with functions_off():
            if category == "freed_graph":
                cause, detail = self._freed(roots)
            elif category == "non_scalar_root":
                cause, detail = self._non_scalar(roots)
            elif category in ("unused_input", "input_no_grad"):
                subject, key, detail = self._input(category, roots, inputs, frame, subject)
                cause = detail.get("copy_made")
                if category == "input_no_grad" and inputs is None:  # a custom backward's own autograd.grad refused
                    last, count = last_frozen(self.registry, every=False)  # a frozen parameter (reentrant checkpointing)
                    if last is not None:
                        cause, key, detail = last.frozen_at, last.key, {"frozen_inputs": count, "last": last.name}
            elif category == "function_backward":
                cause, detail = function_backward_site(text, _tensors(roots))
            elif category == "function_no_backward":
                cause, detail = missing_backward_site(_tensors(roots))
            elif category == "no_derivative":
                cause, detail = underived_site(self.origins, _tensors(roots), text)
            elif category == "hook_result":
                cause, detail = hook_result_site(self.registry, text)
            elif category == "other":
                cause = raised_in(error, call)
            elif category == "inplace_multi_view":  # refused at backward: a saved view whose base was written later
                cause, detail = multi_view_source(self.origins, roots, text)
            elif category == "graphless" and in_hook is not None:  # hooks run with gradients off: the refused one
                cause, subject, detail = in_hook.made, in_hook.subject or "backward()", {"in_hook": in_hook.hook,
                                                                                       "outer": call}
                call = in_hook.call
            elif category == "graphless" and torch.is_inference_mode_enabled():
                # enable_grad() records nothing inside inference_mode: the lines running now, for the judge to
                # find the one under the inference_mode that turned recording off (or the library object that did)
                detail = {"inference": tuple(site for _, _, site in user_stack(1)),
                          "owner_made": library_owner_made(frame), "entered": self.scope.inference_entered()}
            elif category == "graphless" and self.scope.custom_forwards:
                # a custom Function's forward runs with grad off: the value was made there, on the line binding it
                made = last_binding(frame.f_code, subject, call.line) if frame is not None and call is not None else None
                cause = Site(call.file, made) if made is not None else call
                detail = {"forward_of": self.scope.custom_forwards[-1]}
            elif category == "graphless" and not torch.is_grad_enabled():  # a caller's no_grad: where to turn them on
                detail = {"grad_off": tuple(site for _, _, site in user_stack(1))}
            elif category == "graphless":
                cause, detail = graphless_cause(self.registry, frame, subject, call)
            reaches = _reached_leaves(self.registry, roots)
        return self._keep(AutogradError(category, _first_line(text), call, cause, subject, key, detail, failure,
                                        reaches=reaches))

    def op(self, error: RuntimeError, func: Any, args: tuple, kwargs: dict) -> AutogradError | None:
        """An op raised ``error`` in forward; kept when it is one of autograd's (`IN_FORWARD`)."""
        text = str(error)
        category = classify(text)
        if category not in IN_FORWARD:
            return None
        call, frame = user_site(1), user_frame(1)
        label = op_label(func)
        with functions_off():
            tensors = tensors_in(args, kwargs)
            if category == "deepcopy_non_leaf":
                target = tensors[0] if tensors else None
                subject, cause = _attribute_holding(self.registry, target) if target is not None else (None, None)
                detail: dict[str, Any] = {}
            elif category == "inference_saved":
                target = next((t for t in tensors if t.is_inference()), None)
                made = self.origins.inference_sites(target) if target is not None else ()
                cause = made[0] if made else None
                subject, detail = None, {"op": label, "made": made}
            elif category == "requires_grad_non_leaf":
                target = args[0] if args and isinstance(args[0], Tensor) else None
                carried = _carried_over(self.registry, self.origins, target, call) if target is not None else None
                elsewhere = None if carried else made_elsewhere(self.origins, target, frame)
                cause, subject = carried or elsewhere or call, None
                detail = {"op": label, "carried": carried is not None, "elsewhere": elsewhere is not None}
            elif category == "inplace_function_view":  # the line to change: the Function's return of a view, or
                # for a module's full backward hook (its output a view of torch's), where the writing layer was made
                target, hooked = args[0] if args and isinstance(args[0], Tensor) else None, _HOOKED in text
                layer = self.writes.inplace_layer_site(sys._getframe()) if hooked else None
                cause = layer or (view_return_site(target) if target is not None and not hooked else None) or call
                subject, detail = None, {"op": label, "hooked": hooked, "layer": layer is not None}
            else:
                target = args[0] if args and isinstance(args[0], Tensor) else None
                if isinstance(kwargs.get("out"), Tensor):  # out=: the tensor written into
                    target = kwargs["out"]
                cause, subject = call, None
                detail = {"op": label, "view": "view of a leaf" in text, "has_grad": leaf_with_grad(target),
                          **multiple_views(text)}
        key = self.registry.key_of(target)
        if key is not None:
            resolve_names(self.registry)  # the name the note gives is the one the report will
            subject = self.registry.all[key].name
        elif subject is None and target is not None and frame is not None:
            subject = variable_name(frame, target)
        return self._keep(AutogradError(category, _first_line(text), call, cause, subject or "tensor", key, detail))

    def _keep(self, fact: AutogradError) -> AutogradError:
        ident = (fact.category, fact.call, fact.cause, fact.subject, fact.key)
        kept = self.errors.setdefault(ident, fact)
        if kept is not fact:
            kept.count += 1
            kept.reaches |= fact.reaches
        return kept

    # ---- the line to change, from the run's facts -----------------------------------------------------

    def _stored_at(self, stack: Any) -> Site | None:
        """Of the lines that made a carried value, the innermost that stored it on an object (``self.hidden =
        ...`` in a forward, ``self.pred = ...`` in a method): the state the object carries past the frame that
        made it, into the next iteration or the next backward, is the thing to detach there."""
        stored = _stored_sites(self.registry)
        return next((site for _, code, site in stack or ()
                     if site in stored or stores_attribute(code, site.line)), None)

    def _freed(self, roots: list[Tensor]) -> tuple[Site | None, dict[str, Any]]:
        """The first node (nearest the roots) of a graph an earlier backward freed, and the line that made
        the value carried from there: the node's own line, else that of the nearest node above it."""
        origins = self.origins
        starts = graph.grad_roots(_tensors(roots))
        queue = deque((node, None) for node in starts)
        seen = {id(node) for node in starts}
        looked, checked = 0, 0
        while queue and looked < graph.SAFE_WALK and checked < _CHECKS:
            node, above = queue.popleft()
            looked += 1
            stack = origins.stack_of(node) or above
            if origins.freed(node):
                checked += 1
                if not _freed_below(node):
                    continue  # made before that backward, but not part of the graph it freed
                root = any(node is start for start in starts)
                first, again = _called_again(origins.freed_path) if root else (None, None)
                made = origins.site_in_running(stack)
                taken, earlier = (None, False) if root else taken_in(self.registry, origins, self.stepped, node, above)
                # freed by ``autograd.grad`` (forces taken in a forward without retain_graph): that call is the one
                by_grad = origins.freed_by if origins.freed_by_grad and isinstance(origins.freed_by, Site) else None
                site = again or by_grad or origins.kept_at(node) or self._stored_at(stack) or (
                    _first_made(origins, node, stack) if root else taken) or made
                detail = {"node": type(node).__name__, "freed_by": origins.freed_by, "root": root,
                          "inner": stack[0][2] if stack and stack[0][2] != site else None, "first_call": first,
                          "kept": not again and site is not None and site == origins.kept_at(node),
                          "taken_in": site is not None and site == taken and made not in (None, site),
                          "taken_earlier": earlier and site is not None and site == taken,
                          "by_grad": site is not None and site == by_grad}
                if detail["kept"] and (beside := detached_beside(node, origins.detached_states)) is not None:
                    detail["beside"], detail["kept_at"], site = beside, site, beside[2]  # named where those are
                elif detail["kept"] and (reset := reset_in_place(node, self.writes.recent)) is not None:
                    detail["reset"], detail["kept_at"], site = reset.op, site, reset.site  # the reset that kept it
                return site, detail
            for child, _ in node.next_functions:
                if child is not None and id(child) not in seen:
                    seen.add(id(child))
                    queue.append((child, stack))
        return None, {"freed_by": origins.freed_by}

    def _non_scalar(self, roots: list[Tensor]) -> tuple[Site | None, dict[str, Any]]:
        """The line that made the root with more than one value (or not of a floating type); for a root that
        adds a many-valued term to a one-valued loss, the line that made that term."""
        for root in roots:
            if isinstance(root, Tensor) and (root.numel() != 1 or not root.dtype.is_floating_point):
                node = _unreduced_term(root.grad_fn) if root.dtype.is_floating_point else root.grad_fn
                return self.origins.site_of(node), {"shape": tuple(root.shape), "dtype": str(root.dtype)}
        return None, {}

    def _input(self, category: str, roots: list[Tensor], inputs: Any, frame: Any,
               subject: str) -> tuple[str, int | None, dict[str, Any]]:
        """The input of autograd.grad the error is about: one the outputs were not computed from, or one
        that does not require grad."""
        inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs or ())
        if category == "unused_input":
            nodes = list(graph.iter_nodes(graph.grad_roots(_tensors(roots)), graph.SAFE_WALK))
            ids = {id(node) for node in nodes}
            leaves = {id(node.variable) for node in nodes if hasattr(node, "variable")}
            used = [id(t) in leaves if t.grad_fn is None else id(t.grad_fn) in ids for t in inputs]
        else:
            used = [t.requires_grad for t in inputs]
        for index, (tensor, ok) in enumerate(zip(inputs, used)):
            if not ok:
                watched = self.registry.get(tensor)
                name = (variable_name(frame, tensor) if frame is not None else None) or f"inputs[{index}]"
                copy = copy_used(self.registry, watched, nodes) if category == "unused_input" else {}
                return name, watched.key if watched is not None else None, {"index": index, "output": subject, **copy}
        return "inputs", None, {"output": subject}


def _attribute_holding(registry: WatchRegistry, tensor: Tensor) -> tuple[str | None, Site | None]:
    """The module attribute that holds a tensor, and where user code stored it there."""
    for (_, attr), (ref, site) in list(registry.assigned.items()):
        module = ref()
        if module is not None and module.__dict__.get(attr) is tensor:
            return f"{type(module).__name__}.{attr}", site
    for ref, _ in list(registry.modules.values()):
        module = ref()
        for attr, value in (vars(module).items() if module is not None else ()):
            if value is tensor:
                return f"{type(module).__name__}.{attr}", attribute_site(module, attr)
    return None, None


def _reached_leaves(registry: WatchRegistry, roots: list[Tensor]) -> frozenset[int]:
    """The watched leaves the graph of a refused backward's ``roots`` reaches: the step meant to follow it, for
    their optimizer, never came (the script stopped there, or skipped that step)."""
    keys = map(registry.key_of, graph.leaf_tensors(graph.grad_roots(_tensors(roots))))
    return frozenset(key for key in keys if key is not None)


def _carried_over(registry: WatchRegistry, origins: Origins, tensor: Tensor, call: Site | None) -> Site | None:
    """A value refused ``requires_grad`` because it is computed from a leaf this same line made one on an
    earlier pass (a loop's iterate carried with its history): the line that computed the value, the one to
    change (detach it there). None when no such leaf is on its graph."""
    nodes = list(graph.iter_nodes([tensor.grad_fn], graph.SAFE_WALK)) if call is not None else []
    leaves = (registry.get(node.variable) for node in nodes if hasattr(node, "variable"))
    if not any(w is not None and w.site is not None and (w.site.file, w.site.line) == (call.file, call.line)
               for w in leaves):
        return None
    return next((site for site in map(origins.made_at, nodes) if site is not None), None)


def _stored_sites(registry: WatchRegistry) -> set[Site]:
    """The lines where user code set a tensor, a list, tuple or dict as a module attribute (module state)."""
    return {site for _, site in registry.assigned.values() if site is not None}


def _first_made(origins: Origins, root: Any, stack: Any) -> Site | None:
    """A loss whose own graph was freed is backpropagated again: nothing in it can be detached, its forward
    must run again. The line where that forward starts: of the freed nodes below the root made in the same
    running frame, the first one autograd made."""
    running = running_frames()
    frame = origins.entry_in_running(stack, running)
    if frame is None:
        return None
    first, site = None, None
    for node in graph.iter_nodes([root], _WALK):
        made = origins.stack_of(node)
        entry = origins.entry_in_running(made, running) if made and origins.freed(node) else None
        number = sequence_nr(node)
        if entry is not None and entry[:2] == frame[:2] and number is not None and (first is None or number < first):
            first, site = number, entry[2]
    return site


def _called_again(freed_path: tuple[Site, ...]) -> tuple[Site | None, Site | None]:
    """A loss backpropagated whole a second time by another call than the one that freed its graph (a helper
    that already ran backward, and its caller that runs it again): on the refused backward's path, the line
    where it leaves the first one's (the duplicate call), and the first one's line there. Nones when both came
    the same way (a loop running one backward line again on a loss made once before it: that forward must move)
    or are two backward lines of one function (both written there on purpose: the graph must be kept or remade)."""
    path = tuple(site for _, _, site in user_stack(1))
    for depth, (first, second) in enumerate(zip(reversed(freed_path), reversed(path))):
        if first != second:
            innermost = depth == len(path) - 1 and depth == len(freed_path) - 1
            return (None, None) if innermost else (first, second)
    return None, None


def _unreduced_term(node: Any) -> Any:
    """Below a root that joins a one-valued loss term (0-dim, with history) and one many-valued term, the
    node that made the many-valued term: the term that was meant to be reduced before it was added."""
    while node is not None:
        shapes = [(child, output_shape(child)) for child, _ in node.next_functions if child is not None]
        joined = any(shape == () and not hasattr(child, "variable") for child, shape in shapes)
        many = [child for child, shape in shapes if shape is not None and _numel(shape) > 1]
        if not joined or len(many) != 1:
            return node
        node = many[0]
    return node


def _numel(shape: tuple[int, ...]) -> int:
    count = 1
    for size in shape:
        count *= size
    return count


def _freed_below(node: Any) -> bool:
    """Whether a node at or below ``node`` lost its saved tensors (reading one raises "already freed")."""
    for child in graph.iter_nodes([node], _WALK):
        names = [a for a in dir(child) if a.startswith(SAVED_PREFIX)] if function_class(child) is None \
            else ["saved_tensors"]
        for name in names:
            try:
                getattr(child, name)
            except RuntimeError as error:
                if _FREED in str(error):
                    return True
    return False


def _tensors(roots: list[Any]) -> list[Tensor]:
    """The roots that are tensors with history (``autograd.grad`` also takes ``GradientEdge``s)."""
    return [root for root in roots if isinstance(root, Tensor) and root.requires_grad]


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""
