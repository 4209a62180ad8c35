"""Writes text, non-ASCII text, raw bytes and a last line without a newline to stdout, with a clean backward."""
import sys

import torch

model = torch.nn.Linear(2, 1)
model(torch.ones(1, 2)).sum().backward()
print("weight grad:", model.weight.grad.tolist())
print("naïve café ✓")
sys.stdout.flush()
sys.stdout.buffer.write(b"raw \x00\xff bytes\n")
sys.stdout.buffer.flush()
print("no newline at the end", end="")
