"""Log-probabilities of a distribution's own reparameterised samples: ``d.log_prob(d.rsample())``. The sample moves
with the distribution's location just as the density's centre does, so the two gradients to the location cancel,
and a score-function (REINFORCE) loss built on it gives the mean exactly zero gradient (pytorch#10943). Recorded as
a `non_differentiable` event that the judge names only where that gradient did come out exactly zero; a pathwise
loss (SAC's ``Q(s, a)``) gives the location a gradient of its own and stays silent."""
from __future__ import annotations

from typing import Any, Callable

import torch
from torch.distributions import Distribution

from gradcheck_l2c.record.locations import user_site
from gradcheck_l2c.record.state import TraceState

_SAMPLED = "gradcheck_rsampled"  # node metadata: id of each distribution whose rsample() made it -> the user line


def install(state: TraceState, replace: Callable[[type, str, Any], None]) -> None:
    """Wrap each ``rsample`` and ``log_prob`` torch.distributions' classes define themselves (``replace`` undoes it
    when the trace ends)."""
    for value in list(vars(torch.distributions).values()):
        if isinstance(value, type) and issubclass(value, Distribution):
            for name in ("rsample", "log_prob"):
                if name in value.__dict__:
                    replace(value, name, wrapped(state, name, value.__dict__[name]))


def wrapped(state: TraceState, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    """``rsample`` marks its sample's node with the distribution and the user line; ``log_prob`` of a value so
    marked by the same distribution records the cancelled location."""
    scope = state.scope

    def rsample(dist: Distribution, *args: Any, **kwargs: Any) -> Any:
        out = original(dist, *args, **kwargs)
        if isinstance(out, torch.Tensor) and out.grad_fn is not None and scope.in_trace_thread():
            out.grad_fn.metadata.setdefault(_SAMPLED, {}).setdefault(id(dist), user_site(1))
        return out

    def log_prob(dist: Distribution, value: Any, *args: Any, **kwargs: Any) -> Any:
        node = value.grad_fn if isinstance(value, torch.Tensor) else None
        if node is not None and scope.in_trace_thread():
            site = node.metadata.get(_SAMPLED, {}).get(id(dist))
            if site is not None:
                state.cuts.cut("non_differentiable", "log_prob(rsample())", _parameters(dist), site=site,
                               output="cancelled")
        return original(dist, value, *args, **kwargs)

    return rsample if name == "rsample" else log_prob


def _parameters(dist: Distribution) -> list[torch.Tensor]:
    """The tensors with history a distribution (and the one it wraps) was built from."""
    found = []
    for value in vars(dist).values():
        if isinstance(value, Distribution):
            found += _parameters(value)
        elif isinstance(value, torch.Tensor) and value.requires_grad:
            found.append(value)
    return found
