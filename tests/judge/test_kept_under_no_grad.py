"""A module that caches a value computed from its weights (a graph network's enriched embeddings, cleared after each
optimizer step) fills the cache during an evaluation under ``torch.no_grad()``, and the next training step reuses it:
the loss has no graph and backward is refused. Named as a ``no_grad`` error at the evaluation's call inside the block,
with the line that kept the value; the twin that clears the cache when training resumes is silent."""
from __future__ import annotations

import pytest

from gradcheck_l2c import trace

CACHED = """
import torch
from torch import nn
torch.manual_seed(0)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = nn.Embedding(10, 4)
        self.mix = nn.Linear(4, 4)
        self.cache = None

    def invalidate(self):
        self.cache = None

    def forward(self, ids):
        if self.cache is None:
            self.cache = torch.tanh(self.mix(self.table.weight))  # <- kept
        return self.cache[ids]


encoder = Encoder()
optimizer = torch.optim.SGD(encoder.parameters(), lr=0.1)
ids, target = torch.randint(0, 10, (6,)), torch.randn(6, 4)
for epoch in range(2):
    encoder.train()
    loss = (encoder(ids) - target).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()  # <- backward
    optimizer.step()
    encoder.invalidate()
    encoder.eval()
    with torch.no_grad():
        score = encoder(ids).sum()  # <- evaluation
"""
CLEARED = CACHED.replace("    encoder.train()\n", "    encoder.train()\n    encoder.invalidate()\n")


def test_the_evaluation_that_filled_the_cache_is_named(snippet):
    script = snippet(CACHED)
    with trace() as traced, pytest.raises(RuntimeError, match="does not require grad"):
        exec(compile(script.code, str(script.path), "exec"), {"__name__": "__main__"})
    found = [f for f in traced.findings if f.severity in ("error", "warning")]
    assert {(f.kind, f.line) for f in found} == {("no_grad", script.line("evaluation"))}
    assert "`cache`" in found[0].message and f":{script.line('kept')}" in found[0].message


def test_a_cache_cleared_when_training_resumes_is_silent(snippet):
    script = snippet(CLEARED)
    assert [f for f in script.run().findings if f.severity in ("error", "warning")] == []
