"""Cuts a gradient with .item(), then raises from a function (or Ctrl-C with the argument `interrupt`)."""
import sys

import torch


def fail(kind):
    if kind == "interrupt":
        raise KeyboardInterrupt
    raise ValueError("the script failed on purpose")


w = torch.randn(3, requires_grad=True)
loss = torch.tensor(w.sum().item(), requires_grad=True) * 2
loss.backward()
fail(sys.argv[1] if len(sys.argv) > 1 else "error")
