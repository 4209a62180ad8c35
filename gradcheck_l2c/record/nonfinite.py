"""`--nan`: where the first NaN or Inf of a run was born, forward or backward, as facts.

Every floating op output is checked with one reduction (its sum is finite exactly when all its elements
are, barring overflow of the sum itself, which the exact check then clears). Only an output that fails is
looked at closely: an output that is not finite while all its inputs are was *born* there (`NonFinite`,
with the element, the inputs' values there, the user line and the iteration). Backward births are caught by
hooks on the autograd nodes of the ops whose derivative is singular somewhere in their domain (log at 0,
sqrt at 0, norm of a zero vector, ...): a node whose incoming gradient is finite but whose outgoing one is
not made it. A gradient that reaches a watched leaf non-finite without either is recorded too (after each
backward all gradients' norms are taken in a few calls and read once, `stacked.py`). Checks stop at the first
NaN: what follows is its consequence.
"""
from __future__ import annotations

import math
import weakref
from dataclasses import dataclass, field
from typing import Any

import torch

from gradcheck_l2c.record.args import flat, op_label
from gradcheck_l2c.record.live import LiveWatched
from gradcheck_l2c.record.locations import Site, user_site
from gradcheck_l2c.record.scope import Clock
from gradcheck_l2c.record.stacked import StackPlan, stack_plan, stacked_norms
from gradcheck_l2c.record.torch_internals import set_grad_enabled as _set_grad_enabled
from gradcheck_l2c.record.watch import WatchRegistry

Tensor = torch.Tensor
_is_grad_enabled = torch.is_grad_enabled
_MAX_BIRTHS = 16  # distinct places recorded (Inf births that stayed Inf); the first NaN ends recording

#: Ops that only move, select or compare values: they pass non-finite values on but never make one (fills and
#: ``where`` are checked: ``masked_fill(mask, -inf)`` writes the value it is given).
PASSING = frozenset((
    "view", "reshape", "view_as", "reshape_as", "flatten", "unflatten", "squeeze", "unsqueeze", "permute",
    "transpose", "t", "T", "mT", "contiguous", "expand", "expand_as", "__getitem__", "narrow", "select",
    "index_select", "gather", "chunk", "split", "unbind", "cat", "concat", "stack", "clone", "detach", "to",
    "cpu", "cuda", "float", "double", "relu", "relu_", "dropout", "abs", "neg", "__neg__", "max", "min",
    "maximum", "minimum", "clamp", "clamp_", "clamp_min", "clamp_max", "zero_", "zeros_like", "ones_like",
    "empty_like", "empty", "zeros", "ones", "rand", "randn", "rand_like", "randn_like", "arange", "linspace",
    "tensor", "as_tensor", "from_numpy",
    "__get__", "__set__", "requires_grad_", "data", "grad", "copy_", "roll", "flip", "repeat", "tile",
))
#: Ops whose derivative is infinite or undefined at some finite input (their backward can make a NaN from
#: finite values): their autograd nodes get a hook.
SINGULAR = frozenset((
    "log", "log2", "log10", "log1p", "log_", "sqrt", "sqrt_", "rsqrt", "pow", "__pow__", "__rpow__", "pow_",
    "float_power", "div", "__truediv__", "__rtruediv__", "true_divide", "div_", "__itruediv__", "reciprocal",
    "acos", "asin", "arccos", "arcsin", "atanh", "acosh", "atan2", "arctan2", "norm", "linalg_vector_norm",
    "vector_norm", "cdist", "dist", "pdist", "std", "var", "std_mean", "var_mean", "xlogy", "logit", "lgamma",
    "digamma", "erfinv", "tan", "prod", "cumprod", "logsumexp", "cosine_similarity", "pairwise_distance",
))


@dataclass
class NonFinite:
    """One place a non-finite value was born (or came in from the data), with what made it.

    ``phase``: ``forward`` (an op's output), ``backward`` (an op's gradient, by its autograd node), ``data``
    (an op's input was already non-finite and no op made it), ``gradient`` (a leaf's gradient, made by a
    backward the hooks do not cover). ``value``: ``nan``, ``inf`` or ``-inf`` at ``index`` of the output
    (or gradient); ``operands`` the op's inputs' values at that element (None where none maps to it, numbers
    as given), ``largest`` the largest magnitude among the inputs; ``grad`` the gradient arriving there
    (backward). ``became_nan`` is where an Inf from here first turned into NaN.
    """

    phase: str
    op: str
    site: Site | None
    value: str
    index: tuple[int, ...]
    operands: tuple[float | None, ...]
    largest: float | None
    dtype: str
    iteration: int
    grad: float | None = None
    tensor: str = ""
    position: int | None = None  # data: which tensor input was non-finite
    count: int = 1
    became_nan: Site | None = None
    nan_seen: bool = field(default=False)

    @property
    def is_nan(self) -> bool:
        return self.value == "nan"


def _finite(tensor: Tensor) -> bool:
    """One reduction: False if any element is NaN or Inf (or the sum overflowed; then checked exactly)."""
    total = tensor.sum().item()
    if math.isfinite(total):
        return True
    return bool(torch.isfinite(tensor).all())


def _checkable(value: Any) -> bool:
    return isinstance(value, Tensor) and value.is_floating_point() and value.layout is torch.strided \
        and not value.is_meta


def _number(value: Any) -> float | None:
    if isinstance(value, Tensor):
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def _element(tensor: Tensor, index: tuple[int, ...], shape: torch.Size) -> float | None:
    """The value of ``tensor`` at ``index`` of a result of ``shape`` it broadcasts to, if it does."""
    try:
        return float(torch.broadcast_to(tensor, shape)[index])
    except (RuntimeError, IndexError, ValueError):
        return None


def _largest(tensors: list[Tensor]) -> float | None:
    sizes = [float(t.abs().max()) for t in tensors if t.numel() and _finite(t)]
    return max(sizes) if sizes else None


def _kind(value: float) -> str:
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


class NanWatch:
    """Checks op outputs and gradients for non-finite values while the trace runs; keeps the births."""

    def __init__(self, clock: Clock, registry: WatchRegistry) -> None:
        self.clock = clock
        self.registry = registry
        self.births: list[NonFinite] = []
        self.stopped = False  # the first NaN was recorded: nothing after it is news
        self._checked: dict[Any, str] = {}  # op -> its name, or "" for an op whose results are not checked
        self._plan_keys: tuple[int, ...] = ()  # the watched tensors whose gradients _plan stacks
        self._plan: StackPlan | None = None
        self._leaves = LiveWatched(registry, lambda entry: True)  # every watched tensor alive

    # ---- forward ---------------------------------------------------------------------------------

    def handled(self, backward: bool, func: Any, args: tuple, kwargs: dict, out: Any) -> None:
        """A call the interceptor's table handled: a backward ended, or an op ran."""
        if backward:
            self.after_backward()
        else:
            self.forward(func, args, kwargs, out)

    def forward(self, func: Any, args: tuple, kwargs: dict, out: Any) -> None:
        """Check an op's result; called by the interceptor after every op while --nan is on."""
        if self.stopped:
            return
        name = self._checked.get(func)
        if name is None:  # first call of this op: its name, or "" for ops that never make a non-finite value
            label = op_label(func)
            name = self._checked[func] = "" if label in PASSING else label
        if not name:
            return
        if type(out) is Tensor:
            outs: tuple | list = (out,)
        elif isinstance(out, (tuple, list)) and out and type(out[0]) is Tensor:
            outs = out
        else:
            return
        grad = _is_grad_enabled()
        if grad:
            _set_grad_enabled(False)
        try:
            for value in outs:  # one reduction each; the exact look only where its sum is not finite
                if _checkable(value) and not math.isfinite(value.sum().item()) and not _finite(value):
                    self._examine(name, args, kwargs, value)
                    if self.stopped:
                        break
        except Exception:  # values that cannot be read here (functorch transforms): the script's run comes first
            pass
        finally:
            if grad:
                _set_grad_enabled(True)
        if name in SINGULAR and not self.stopped and type(out) is Tensor and out.grad_fn is not None:
            self._hook_node(name, args, kwargs, out)

    def _examine(self, name: str, args: tuple, kwargs: dict, out: Tensor) -> None:
        """A non-finite output: born here, from the data, an Inf turning NaN, or passed on."""
        inputs = [t for t in flat(args) if isinstance(t, Tensor) and t is not out]
        if kwargs:
            inputs.extend(v for v in kwargs.values() if isinstance(v, Tensor) and v is not out)
        floats = [t for t in inputs if _checkable(t)]
        bad_inputs = [i for i, t in enumerate(floats) if not _finite(t)]
        index = tuple(torch.nonzero(~torch.isfinite(out))[0].tolist())
        value = _kind(float(out[index]))
        has_nan = bool(torch.isnan(out).any())
        if not bad_inputs:
            operands = tuple(_element(a, index, out.shape) if isinstance(a, Tensor) else _number(a)
                             for a in (*flat(args), *(kwargs or {}).values())
                             if isinstance(a, Tensor) or _number(a) is not None)
            self._born(NonFinite("forward", name, user_site(1), "nan" if has_nan else value, index, operands,
                                 _largest(floats), str(out.dtype).replace("torch.", ""), self.iteration))
            return
        if not self.births:
            position = bad_inputs[0]
            source = floats[position]
            at = tuple(torch.nonzero(~torch.isfinite(source))[0].tolist()) if source.dim() else ()
            self._born(NonFinite("data", name, user_site(1), _kind(float(source[at])), at, (), None,
                                 str(source.dtype).replace("torch.", ""), self.iteration,
                                 position=position, tensor=f"{tuple(source.shape)}"))
            return
        if has_nan and not any(bool(torch.isnan(floats[i]).any()) for i in bad_inputs):
            self._turned_nan(user_site(1))

    # ---- backward --------------------------------------------------------------------------------

    def _hook_node(self, name: str, args: tuple, kwargs: dict, out: Tensor) -> None:
        """Hook the node of a singular op: its backward may make a NaN from finite gradients."""
        site = user_site(1)
        sources = [weakref.ref(t) for t in flat(args) if isinstance(t, Tensor) and t.requires_grad]
        dtype = str(out.dtype).replace("torch.", "")
        watch = self

        def check(grad_inputs: tuple, grad_outputs: tuple) -> None:
            if watch.stopped:
                return
            grad = _is_grad_enabled()
            if grad:
                _set_grad_enabled(False)
            try:
                watch._node_done(name, site, dtype, sources, grad_inputs, grad_outputs)
            except Exception:  # never let the check break the backward
                pass
            finally:
                if grad:
                    _set_grad_enabled(True)

        out.grad_fn.register_hook(check)

    def _node_done(self, name: str, site: Site | None, dtype: str, sources: list, grad_inputs: tuple,
                   grad_outputs: tuple) -> None:
        made = [(i, g) for i, g in enumerate(grad_inputs) if _checkable(g) and not _finite(g)]
        if not made:
            return
        arriving = [g for g in grad_outputs if _checkable(g)]
        if any(not _finite(g) for g in arriving):
            return  # passed on from a node further down
        position, bad = made[0]
        index = tuple(torch.nonzero(~torch.isfinite(bad))[0].tolist())
        has_nan = any(bool(torch.isnan(g).any()) for _, g in made)
        source = sources[position]() if position < len(sources) else None
        operands = (_element(source, index, bad.shape),) if source is not None else ()
        incoming = _element(arriving[0], index, bad.shape) if len(arriving) == 1 else None
        self._born(NonFinite("backward", name, site, "nan" if has_nan else _kind(float(bad[index])), index,
                             operands, None, dtype, self.iteration, grad=incoming))

    def after_backward(self) -> None:
        """A backward ended: a watched leaf's gradient that is not finite, which no node hook saw made."""
        if self.stopped:
            return
        grad = _is_grad_enabled()
        if grad:
            _set_grad_enabled(False)
        try:
            self._check_leaves()
        except Exception:  # never let the check break the script
            pass
        finally:
            if grad:
                _set_grad_enabled(True)

    def _check_leaves(self) -> None:
        """The norms of all gradients in a few calls and one read: finite unless a gradient is not (or a norm
        overflowed); only then is each gradient looked at, in the order the tensors were watched."""
        found = [(entry, gradient) for entry, _, gradient in self._leaves.gradients() if _checkable(gradient)]
        if not found:
            return
        keys, gradients = tuple(entry.key for entry, _ in found), [gradient for _, gradient in found]
        try:
            if keys != self._plan_keys:
                self._plan_keys, self._plan = keys, stack_plan(gradients)
            if math.isfinite(stacked_norms(gradients, self._plan).sum().item()):
                return
        except RuntimeError:  # gradients that changed dtype or device since the plan: each looked at below
            self._plan_keys = ()
        for entry, gradient in found:
            if not _finite(gradient):
                self._leaf_gradient(entry, gradient)
                return

    def _leaf_gradient(self, watched: Any, gradient: Tensor) -> None:
        """A watched tensor's gradient is not finite: born in a backward no hook covers, or an Inf turned NaN."""
        index = tuple(torch.nonzero(~torch.isfinite(gradient))[0].tolist())
        value = "nan" if bool(torch.isnan(gradient).any()) else _kind(float(gradient[index]))
        if self.births:
            if value == "nan":
                self._turned_nan(user_site(2))
            return
        self._born(NonFinite("gradient", "backward", user_site(2), value, index, (), None,
                             str(gradient.dtype).replace("torch.", ""), self.iteration,
                             tensor=watched.name or f"tensor {tuple(watched.shape)}"))

    # ---- keeping -----------------------------------------------------------------------------------

    @property
    def iteration(self) -> int:
        """The training iteration now: the backward passes that ended, plus one."""
        return self.clock.backwards + 1

    def _born(self, fact: NonFinite) -> None:
        for known in self.births:
            if (known.phase, known.site, known.op) == (fact.phase, fact.site, fact.op) \
                    and known.is_nan == fact.is_nan:
                known.count += 1
                return
        if len(self.births) < _MAX_BIRTHS or fact.is_nan:
            self.births.append(fact)
        if fact.is_nan:
            self.stopped = True

    def _turned_nan(self, site: Site | None) -> None:
        """A NaN made from Infs only: the first Inf birth is its cause."""
        first = self.births[0]
        first.became_nan = site
        first.nan_seen = True
        self.stopped = True
