"""Cuts a gradient with .item(), then exits with the status given as the first argument (or sys.exit())."""
import sys

import torch

w = torch.randn(3, requires_grad=True)
loss = torch.tensor(w.sum().item(), requires_grad=True) * 2
loss.backward()
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else None)
