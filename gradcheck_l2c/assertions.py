"""Test assertions about gradients: does the loss reach these tensors, did a step cut anything.

They never touch the user's graph or ``.grad`` fields: gradients are computed with
``torch.autograd.grad(..., retain_graph=True)``, so a test may assert and then call
``loss.backward()`` as usual.
"""
from __future__ import annotations

import fnmatch
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch

from gradcheck_l2c.errors import UsageError
from gradcheck_l2c.present.textreport import display_path
from gradcheck_l2c.record.graph import iter_nodes
from gradcheck_l2c.record.locations import user_site
from gradcheck_l2c.records import FAIL_ON, Finding, fails
from gradcheck_l2c.tracer import Trace, active_trace, disabled_by_environment, trace

_NO_TRACE_HINT = (
    "Run the step under gradcheck_l2c.trace() or @pytest.mark.gradcheck to see the file:line "
    "that cut each one."
)


@dataclass(frozen=True)
class _Target:
    """One tensor to check, with the names a user may know it by (the first is shown)."""

    tensor: torch.Tensor
    names: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.names[0]


def assert_grad_reaches(
    loss: torch.Tensor,
    *targets: torch.Tensor | torch.nn.Module,
    allow_zero: bool = False,
    exclude: Iterable[str | torch.Tensor] | str | torch.Tensor = (),
) -> None:
    """Assert that ``loss`` gives every target tensor (or every parameter of a target module)
    a gradient that exists and, unless ``allow_zero``, is not all zeros.

    ``exclude`` skips tensors, given as objects or as names/globs (``"fc3.*"``, ``"model.w"``).
    The failure message lists every tensor that got nothing, with the ``file:line`` that cut it
    when a trace is running, otherwise with where its path to the loss ends. A no-op when
    ``GRADCHECK_L2C_DISABLED`` is set.
    """
    __tracebackhide__ = True
    if _tracing_disabled():
        return
    if not isinstance(loss, torch.Tensor):
        raise TypeError(f"assert_grad_reaches: loss must be a torch.Tensor, got {type(loss).__name__}")
    checked = _exclude(_targets(targets, sys._getframe(1)), exclude)
    t = active_trace()
    if t is not None:  # the user asked for these gradients here: the trace judges them as expected
        t.expect([target.tensor for target in checked], user_site(1))
    _check_grad_fn(loss)
    problems = _problems(loss, checked, allow_zero)
    if problems:
        raise AssertionError(_message(problems, len(checked)))


def assert_grad_flows(step_fn: Callable[..., Any], *args: Any, watch: Any = None, **kwargs: Any) -> Trace:
    """Run ``step_fn(*args, **kwargs)`` once under the tracer and assert nothing cut a gradient.

    Returns the finished :class:`Trace` so a test can look further (``t.watched``, ``t.graphs``).
    """
    __tracebackhide__ = True
    failure: RuntimeError | None = None
    with trace(watch=watch) as t:
        try:
            step_fn(*args, **kwargs)
        except RuntimeError as error:  # a backward that PyTorch refused: the trace knows why
            failure = error
    if failure is not None:
        if fails(t.findings, "error"):
            raise AssertionError(f"{_callable_name(step_fn)} raised {type(failure).__name__}: {failure}\n"
                                 f"{t.report()}") from failure
        raise failure
    assert_trace_clean(t)
    if t.backward_count == 0 and not _tracing_disabled():
        raise AssertionError(
            f"{_callable_name(step_fn)} ran no backward pass, so no gradient was checked: "
            "pass a function that computes the loss and calls loss.backward()."
        )
    return t


def assert_trace_clean(t: Trace, *, fail_on: str = "error") -> None:
    """Raise ``AssertionError`` with the trace's report if it has a finding at least as severe
    as ``fail_on`` (``"error"``, ``"warning"``, ``"info"``; ``"never"`` never fails), and
    ``UsageError`` if a watch pattern matched no tensor (a typo would make the check vacuous)."""
    __tracebackhide__ = True
    check_fail_on(fail_on)
    if t.unmatched_patterns:
        known = ", ".join(t.watched_names) or "none"
        raise UsageError(
            f"watch pattern(s) {', '.join(repr(p) for p in t.unmatched_patterns)} matched no tensor; "
            f"the trace saw: {known}"
        )
    if fails(t.findings, fail_on):
        raise AssertionError(t.report())


def check_fail_on(fail_on: object) -> None:
    """Raise ``ValueError`` unless ``fail_on`` is one of :data:`FAIL_ON`."""
    if fail_on not in FAIL_ON:
        choices = ", ".join(repr(c) for c in FAIL_ON)
        raise ValueError(f"fail_on={fail_on!r} is not one of {choices}")


def _check_grad_fn(loss: torch.Tensor) -> None:
    """A loss without ``grad_fn`` reaches nothing: say which cuts made it so, when a trace knows."""
    __tracebackhide__ = True
    if loss.grad_fn is None:
        t = active_trace()
        cuts = t.cuts_of(loss) if t is not None else []
        if cuts:
            lines = ["loss has no grad_fn, so no gradient reaches anything: its values were cut off the "
                     "autograd graph here:"]
            for finding in cuts:
                lines.extend(_finding_lines(finding))
            raise AssertionError("\n".join(lines))
        hint = ("the trace saw no cut on its way" if t is not None else _NO_TRACE_HINT)
        raise AssertionError(
            "loss has no grad_fn, so no gradient reaches anything (computed under torch.no_grad(), from "
            f".detach()ed tensors, or from .item() values?). {hint}"
        )


def _targets(targets: tuple[object, ...], caller: Any) -> list[_Target]:
    """Expand modules into their parameters and name every tensor after the caller's variables."""
    if not targets:
        raise TypeError("assert_grad_reaches: give at least one tensor or module to check")
    known = _caller_names(caller)
    found: list[_Target] = []
    seen: set[int] = set()
    for position, target in enumerate(targets, start=1):
        if isinstance(target, torch.nn.Module):
            prefix = known.get(id(target), type(target).__name__)
            items = [
                _Target(param, (known.get(id(param), f"{prefix}.{name}"), f"{prefix}.{name}", name))
                for name, param in target.named_parameters()
            ]
        elif isinstance(target, torch.Tensor):
            items = [_Target(target, (known.get(id(target), f"argument {position}"),))]
        else:
            hint = " (pass tensors as separate arguments: *params)" if isinstance(target, Iterable) else ""
            raise TypeError(
                f"assert_grad_reaches: target {position} is a {type(target).__name__}; "
                f"expected a torch.Tensor or torch.nn.Module{hint}"
            )
        for item in items:
            if id(item.tensor) not in seen:
                seen.add(id(item.tensor))
                found.append(item)
    return found


def _caller_names(frame: Any) -> dict[int, str]:
    """``id -> name`` for the caller's local tensors and modules, and those modules' parameters."""
    names: dict[int, str] = {}
    for var, value in frame.f_locals.items():
        if isinstance(value, torch.Tensor):
            names.setdefault(id(value), var)
        elif isinstance(value, torch.nn.Module):
            names.setdefault(id(value), var)
            for name, param in value.named_parameters():
                names.setdefault(id(param), f"{var}.{name}")
    return names


def _exclude(targets: list[_Target], exclude: object) -> list[_Target]:
    if isinstance(exclude, (str, torch.Tensor)):
        exclude = [exclude]
    if not isinstance(exclude, Iterable):
        raise TypeError(
            f"assert_grad_reaches: exclude must be names, globs or tensors, got {type(exclude).__name__}"
        )
    patterns: list[str] = []
    tensors: set[int] = set()
    for item in exclude:
        if isinstance(item, str):
            patterns.append(item)
        elif isinstance(item, torch.Tensor):
            tensors.add(id(item))
        else:
            raise TypeError(
                f"assert_grad_reaches: exclude holds a {type(item).__name__}; "
                "expected names, globs or tensors"
            )
    kept = [
        t
        for t in targets
        if id(t.tensor) not in tensors
        and not any(fnmatch.fnmatchcase(name, p) for name in t.names for p in patterns)
    ]
    if not kept:
        raise ValueError("assert_grad_reaches: exclude removed every target; nothing is left to check")
    return kept


def _problems(loss: torch.Tensor, targets: list[_Target], allow_zero: bool) -> list[tuple[_Target, str]]:
    """Each target that gets no gradient, with the reason seen from the graph."""
    nodes = list(iter_nodes([loss.grad_fn]))  # keeps the nodes alive while their ids are compared
    node_ids = {id(node) for node in nodes}
    leaf_ids = {id(node.variable) for node in nodes if hasattr(node, "variable")}
    problems: list[tuple[_Target, str]] = []
    reachable: list[_Target] = []
    unreachable: list[torch.Tensor] = []
    for target in targets:
        tensor = target.tensor
        if not tensor.requires_grad:
            problems.append((target, "requires_grad is False, so autograd never tracks it"))
        elif (id(tensor) in leaf_ids) if tensor.grad_fn is None else (id(tensor.grad_fn) in node_ids):
            reachable.append(target)
        else:
            unreachable.append(tensor)
            problems.append((target, "not reachable from the loss: nothing in the loss's graph leads to it"))
    # A running trace judges this backward too; showing it the unreachable tensors lets it
    # explain them (its findings name the cut) even before the user's own backward.
    asked = [t.tensor for t in reachable] + (unreachable if active_trace() is not None else [])
    if asked:
        grads = _grads(loss, asked)
        for target, grad in zip(reachable, grads):
            if grad is None:
                reason = "made by an op in the loss's graph, but the loss does not use this output of it"
                problems.append((target, reason))
            elif not allow_zero and not torch.count_nonzero(grad):
                problems.append((target, "gradient is all zeros"))
    order = {id(t.tensor): i for i, t in enumerate(targets)}
    return sorted(problems, key=lambda p: order[id(p[0].tensor)])


def _grads(loss: torch.Tensor, tensors: list[torch.Tensor]) -> tuple[torch.Tensor | None, ...]:
    try:
        return torch.autograd.grad(
            loss, tensors, grad_outputs=torch.ones_like(loss), retain_graph=True, allow_unused=True
        )
    except RuntimeError as err:
        raise UsageError(
            f"assert_grad_reaches could not backpropagate from the loss ({err}). Call it before "
            "loss.backward(), or call loss.backward(retain_graph=True)."
        ) from None


def _message(problems: list[tuple[_Target, str]], n_checked: int) -> str:
    t = active_trace()
    noun = "tensor" if n_checked == 1 else "tensors"
    lines = [f"{len(problems)} of {n_checked} {noun} got no gradient from the loss:"]
    for target, reason in problems:
        shape = tuple(target.tensor.shape)
        lines.append(f"  {target.name} {shape}: {reason}")
        for finding in t.findings_for(target.tensor) if t is not None else []:
            lines.extend(_finding_lines(finding))
    if t is None:
        lines.append(_NO_TRACE_HINT)
    return "\n".join(lines)


def _finding_lines(f: Finding) -> list[str]:
    lines = [f"    {display_path(f.file)}:{f.line}: {f.message}"]
    if f.code:
        lines.append(f"        {f.code.strip()}")
    if f.fix:
        lines.append(f"      fix: {f.fix}")
    return lines


def _callable_name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


def _tracing_disabled() -> bool:
    return disabled_by_environment()
