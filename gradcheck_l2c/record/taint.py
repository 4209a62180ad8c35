"""Provenance that survives gradient cuts.

When a watched tensor's values leave autograd (``.item()``, ``detach``, ``no_grad``...), the result
is *tainted*: it remembers which watched tensors it came from and through which cuts. Taint flows
through every later operation, so when those values come back into a loss — through
``load_state_dict``, say — the tracer can list every cut in the order the values flowed.
"""
from __future__ import annotations

import weakref
from typing import Any

import torch

from gradcheck_l2c.record.events import Event

Chain = tuple[Event, ...]


class Taint:
    """Immutable map from watched-tensor key to the chain of cuts its values went through."""

    __slots__ = ("chains", "epoch", "alive", "spent", "__weakref__")

    def __init__(self, chains: dict[int, Chain]) -> None:
        self.chains = chains
        self.epoch = -1  # the store's epoch when `alive` was last computed
        self.alive = True
        self.spent = False  # a number carrying it came back into torch (`spend`)

    def __repr__(self) -> str:
        return f"Taint({ {k: [e.detail for e in c] for k, c in self.chains.items()} })"


class TaintedFloat(float):
    """A Python number computed from a watched tensor (``.item()``, ``float()``).

    Arithmetic with other numbers keeps the provenance (``total -= logp.item() * r`` is still tied to
    the ``.item()``), so a tensor later built from the result names the cut. The values are exactly
    those of plain floats; it pickles, copies and prints as a plain float.
    """

    __slots__ = ("taint", "store", "__weakref__")

    def __reduce__(self) -> tuple[Any, ...]:
        return (float, (float(self),))

    def __getattr__(self, name: str) -> Any:
        """An attribute a float lacks: asked of the number as of a tensor (``loss.item().backward()``), a use."""
        if name not in TaintedFloat.__slots__:
            spend(self.taint)
        return float.__getattribute__(self, name)


def _keeps_taint(name: str) -> Any:
    """A float operator whose float result carries the taint of its tainted operands."""
    plain = getattr(float, name)

    def operator(self: TaintedFloat, *other: Any) -> Any:
        result = plain(self, *other)
        if type(result) is not float:
            return result
        taint = self.taint
        if other and type(other[0]) is TaintedFloat and other[0].taint is not taint:
            taint = union(taint, other[0].taint)
        return self.store.tainted_float(result, taint)

    operator.__name__ = name
    return operator


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
              "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__",
              "__neg__", "__pos__", "__abs__"):
    setattr(TaintedFloat, _name, _keeps_taint(_name))


def spend(taint: Taint) -> None:
    """A number ``.item()`` returned came back into torch, or was asked for a tensor's attribute: its ``.item()``
    cuts were uses of the values, not a reading for a log (once per taint)."""
    if not taint.spent:
        taint.spent = True
        for chain in taint.chains.values():
            for event in chain:
                if event.kind == "item":
                    event.extra["spent"] = True


def union(first: Taint, second: Taint) -> Taint:
    """Both taints' chains; for a tensor reached both ways the shorter chain wins."""
    chains = dict(first.chains)
    for key, chain in second.chains.items():
        if key not in chains or len(chain) < len(chains[key]):
            chains[key] = chain
    return Taint(chains)


class _KeyedRef(weakref.ref):
    """A weak reference that remembers the id it is filed under (one shared callback, no closures)."""

    __slots__ = ("key",)


class TaintStore:
    """Which live objects (tensors, arrays) carry a taint; entries vanish with their objects."""

    _MEMO_LIMIT = 4096

    def __init__(self) -> None:
        # the interceptor reads these two directly: either non-empty switches on its slow path
        self.by_id: dict[int, tuple[weakref.ref, Taint]] = {}  # tainted tensors and arrays, by id
        self.numbers: dict[int, weakref.ref] = {}  # live TaintedFloats
        self.settled: set[int] = set()  # keys whose gradient arrived where it was meant to: chains about them stop
        self.on_settle: list[Any] = []  # called with each key once it settles, after the sweep below
        self.swept = 0  # how many tainted values that sweep let go, in all: a key they named may be named no more
        self._epoch = 0
        self._merges: dict[tuple[int, int], tuple[Taint, Taint, Taint]] = {}
        self._extensions: dict[tuple[int, int], tuple[Taint, Event, Taint]] = {}

    def __bool__(self) -> bool:
        """Whether any live tensor or array carries a taint."""
        return bool(self.by_id)


    def settle(self, key: int) -> None:
        """The watched tensor ``key`` got a gradient: chains about it no longer need to travel."""
        if key not in self.settled:
            self.settled.add(key)
            self._epoch += 1
            # forget what no longer matters, so the interceptor's fast path comes back sooner
            if self.by_id:
                for ident, (_, taint) in list(self.by_id.items()):
                    if not self.live(taint):
                        del self.by_id[ident]
                        self.swept += 1
            if self.numbers:
                for ident, ref in list(self.numbers.items()):
                    number = ref()
                    if number is None or not self.live(number.taint):
                        del self.numbers[ident]
                        self.swept += 1
            for call in self.on_settle:
                call(key)

    def unsettle(self, keys: set[int]) -> None:
        """A new optimizer took these watched tensors (a new phase): their cuts matter again until a step finds
        their gradient (a head trained in one phase and meant to learn through a penalty in the next)."""
        back = self.settled & keys
        if back:
            self.settled -= back
            self._epoch += 1

    def live(self, taint: Taint) -> bool:
        """Whether the taint still names a watched tensor that has not yet got a gradient."""
        if taint.epoch != self._epoch:
            taint.alive = not self.settled.issuperset(taint.chains)  # a key not settled yet (a C loop over the keys)
            taint.epoch = self._epoch
        return taint.alive

    def mentions(self, key: int) -> bool:
        """Whether a live tensor, array or number carries a chain about watched tensor ``key``."""
        numbers = (ref() for ref in list(self.numbers.values()))
        return any(key in taint.chains for _, taint in list(self.by_id.values())) \
            or any(number is not None and key in number.taint.chains for number in numbers)

    def get(self, obj: Any) -> Taint | None:
        if type(obj) is TaintedFloat:
            taint = obj.taint
            spend(taint)
        else:
            entry = self.by_id.get(id(obj))
            if entry is None or entry[0]() is not obj:
                return None
            taint = entry[1]
        return taint if self.live(taint) else None

    def set(self, obj: Any, taint: Taint) -> None:
        try:
            ref = _KeyedRef(obj, self._drop)
        except TypeError:
            return
        ref.key = id(obj)
        self.by_id[ref.key] = (ref, taint)

    def _drop(self, ref: "_KeyedRef") -> None:
        entry = self.by_id.get(ref.key)
        if entry is not None and entry[0] is ref:
            del self.by_id[ref.key]

    def assign(self, obj: Any, taint: Taint | None) -> None:
        """Set (or, with None, clear) an object's taint, touching nothing when it is unchanged."""
        entry = self.by_id.get(id(obj))
        if entry is not None and entry[0]() is obj:
            if entry[1] is taint:
                return
            if taint is None:
                del self.by_id[id(obj)]
                return
        if taint is not None:
            self.set(obj, taint)

    def discard(self, obj: Any) -> None:
        entry = self.by_id.get(id(obj))
        if entry is not None and entry[0]() is obj:
            del self.by_id[id(obj)]

    def of_args(self, args: tuple, kwargs: dict | None = None) -> Taint | None:
        """The union of the taints of an op's arguments (also inside list and tuple arguments)."""
        by_id = self.by_id
        taint = None
        for arg in args:
            entry = by_id.get(id(arg))
            if entry is not None:
                if entry[0]() is arg and self.live(entry[1]):
                    taint = entry[1] if taint is None else self.merge(taint, entry[1])
            elif type(arg) is TaintedFloat:
                if self.live(arg.taint):
                    taint = arg.taint if taint is None else self.merge(taint, arg.taint)
            elif type(arg) in (list, tuple):
                for item in arg:
                    found = self.get(item)
                    if found is not None:
                        taint = self.merge(taint, found)
        if kwargs:
            for value in kwargs.values():
                found = self.get(value)
                if found is not None:
                    taint = self.merge(taint, found)
        return taint

    def mark(self, out: Any, taint: Taint | None) -> None:
        """Give the tensors of an op's output a taint (replacing what they had)."""
        if taint is None:
            return
        if isinstance(out, torch.Tensor):
            current = self.by_id.get(id(out))
            if current is None or current[1] is not taint or current[0]() is not out:
                self.set(out, taint)
        elif isinstance(out, (list, tuple)):
            for item in out:
                if isinstance(item, torch.Tensor):
                    self.set(item, taint)

    def propagate(self, args: tuple, kwargs: dict, out: Any) -> None:
        """The interceptor's hot path: give an op's output the union of its arguments' taints."""
        taint = self.of_args(args, kwargs)
        if taint is not None:
            self.mark(out, taint)

    def merge(self, first: Taint | None, second: Taint | None) -> Taint | None:
        """The union of two taints; for a tensor reached both ways the shorter chain wins."""
        if first is None or first is second:
            return second
        if second is None:
            return first
        memo_key = (id(first), id(second))
        memo = self._merges.get(memo_key)
        if memo is not None and memo[0] is first and memo[1] is second:
            return memo[2]
        merged = union(first, second)
        if len(self._merges) > self._MEMO_LIMIT:
            self._merges.clear()
        self._merges[memo_key] = (first, second, merged)
        return merged

    def extend(self, taint: Taint, event_for: dict[int, Event] | Event) -> Taint:
        """Append a cut to every chain (or, given a dict, to the chains of the keys it names)."""
        if isinstance(event_for, Event):
            memo_key = (id(taint), id(event_for))
            memo = self._extensions.get(memo_key)
            if memo is not None and memo[0] is taint and memo[1] is event_for:
                return memo[2]
            result = Taint({k: _append(c, event_for) for k, c in taint.chains.items()})
            if len(self._extensions) > self._MEMO_LIMIT:
                self._extensions.clear()
            self._extensions[memo_key] = (taint, event_for, result)
            return result
        return Taint({k: _append(c, event_for[k]) if k in event_for else c for k, c in taint.chains.items()})

    def tainted_float(self, value: float, taint: Taint) -> float:
        """The number ``.item()`` returned, carrying its taint while that still matters."""
        if not self.live(taint):
            return value
        result = TaintedFloat(value)
        result.taint = taint
        result.store = self
        floats, key = self.numbers, id(result)
        floats[key] = weakref.ref(result, lambda ref, key=key: floats.get(key) is ref and floats.pop(key))
        return result


def _append(chain: Chain, event: Event) -> Chain:
    return chain if event in chain else chain + (event,)


def fresh(events: dict[int, Event]) -> Taint:
    """A taint that starts at these cuts, one per watched key."""
    return Taint({key: (event,) for key, event in events.items()})
