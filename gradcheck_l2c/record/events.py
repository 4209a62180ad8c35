"""Events: what the tracer saw happen to a watched tensor's values, deduplicated by place."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from gradcheck_l2c.record.locations import Site


@dataclass(eq=False)
class Event:
    """One kind of thing happening at one line to one watched tensor's values, ``count`` times.

    ``detail`` names the operation as the user wrote it (``.item()``, ``load_state_dict()``,
    ``argmax``); ``source`` is the autograd node the values had just before a cut, kept so the
    renderer can draw where the path ends.
    """

    kind: str
    key: int
    site: Site | None
    detail: str
    order: int
    count: int = 1
    source: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


class EventLog:
    """All events of one trace, one per (kind, tensor, place, operation)."""

    def __init__(self) -> None:
        self._events: dict[tuple, Event] = {}

    def record(self, kind: str, key: int, site: Site | None, detail: str, source: Any = None,
               **extra: Any) -> Event:
        index = (kind, key, site, detail)
        event = self._events.get(index)
        if event is None:
            event = Event(kind, key, site, detail, len(self._events), source=source, extra=extra)
            self._events[index] = event
        else:
            event.count += 1
            if source is not None and event.source is None:
                event.source = source
        return event

    def for_key(self, key: int) -> list[Event]:
        return [event for event in self._events.values() if event.key == key]

    def of_kind(self, *kinds: str) -> list[Event]:
        return [event for event in self._events.values() if event.kind in kinds]

    def __iter__(self) -> Iterator[Event]:
        return iter(list(self._events.values()))

    def __len__(self) -> int:
        return len(self._events)
