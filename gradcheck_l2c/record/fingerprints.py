"""What the trace keeps of a tensor's values to tell later whether a step (or the script) changed any of them."""
from __future__ import annotations

from typing import Any

import torch

from gradcheck_l2c.record.torch_internals import functions_off

#: A plain tensor of at most this many values is kept as a copy (on the CPU, at most 512 KB) and compared exactly: a
#: copy and a comparison cost a seventh of the three sums below for a bias or a norm's weight (their cost is per call,
#: which a small model's first steps paid per parameter), two thirds at this size.
FINGERPRINT_COPY = 1 << 16
#: The most values a larger tensor's sums convert to float64 at once: on the CPU 64K (512 KB, which stays in the cache
#: with the two temporaries its sums make), on an accelerator 4M (32 MB: a few kernel launches per million values).
FINGERPRINT_CHUNK, FINGERPRINT_CHUNK_ON_DEVICE = 1 << 16, 1 << 22


class Fingerprint:
    """A tensor's values as they are now: a copy of a small plain tensor, else three float64 sums (of the values, their
    magnitudes, their squares) that change when any value changes, short of an exact cancellation in all three (a
    permutation of the values keeps them). Both are the tool's own reads, past any torch-function mode."""

    __slots__ = ("_copy", "_sums")

    def __init__(self, tensor: torch.Tensor) -> None:
        with functions_off(), torch.no_grad():
            values = tensor.detach()
            if _copied(values):
                self._copy: torch.Tensor | None = values.clone() if values.device.type == "cpu" else values.cpu()
                self._sums: torch.Tensor | None = None
            else:
                self._copy, self._sums = None, _sums_of(values)

    def matches(self, tensor: torch.Tensor) -> bool:
        """Whether ``tensor`` holds the values it held when this was taken (a NaN among them never matches)."""
        with functions_off(), torch.no_grad():
            values = tensor.detach()
            if self._copy is not None:
                return torch.equal(values if values.device.type == "cpu" else values.cpu(), self._copy)
            return self._sums is not None and torch.equal(_sums_of(values), self._sums)

    def forget(self, _gone: Any = None) -> None:
        """The tensor is gone: what was kept of it is of no more use (a weak reference's callback)."""
        self._copy = self._sums = None


def _copied(values: torch.Tensor) -> bool:
    """Whether `Fingerprint` keeps a copy of ``values``: a small dense plain tensor of real data."""
    return (type(values) is torch.Tensor and values.layout is torch.strided and values.numel() <= FINGERPRINT_COPY
            and not values.is_quantized and values.device.type != "meta")


def _sums_of(values: torch.Tensor) -> torch.Tensor:
    """The three sums, on the CPU. A large tensor is summed a chunk at a time: whole, a language model's embedding (39M
    values) took about 600 MB more peak memory at its first steps, on the script's device, and nine times as long on
    the CPU."""
    chunk = FINGERPRINT_CHUNK if values.device.type == "cpu" else FINGERPRINT_CHUNK_ON_DEVICE
    if values.layout is not torch.strided or values.numel() <= chunk:
        return _sums(values.to(torch.float64)).cpu()
    flat = values.reshape(-1)
    sums = torch.zeros(3, dtype=torch.float64, device=flat.device)
    for start in range(0, flat.numel(), chunk):
        sums += _sums(flat[start:start + chunk].to(torch.float64))
    return sums.cpu()


def _sums(values: torch.Tensor) -> torch.Tensor:
    return torch.stack((values.sum(), values.abs().sum(), (values * values).sum()))
