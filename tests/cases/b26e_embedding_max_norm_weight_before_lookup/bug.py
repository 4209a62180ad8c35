"""PyTorch issue #26596 "nn.Embedding with max_norm shows unstable behavior and causes sometimes runtime error",
https://github.com/pytorch/pytorch/issues/26596 (reported from a knowledge-graph embedding environment): an
nn.Embedding built with max_norm is used twice in one step, first its whole table `embedding.weight @ W.t()`
(line a), then a lookup `embedding(idx)` (line b). With max_norm set, the lookup renormalises the looked-up rows of
`embedding.weight` in place (embedding_renorm_ under no_grad), but the matmul of line a saved that same weight for its
backward, so loss.backward() raises "one of the variables needed for gradient computation has been modified by an
inplace operation"; the user saw it go away when removing max_norm or swapping lines a and b.
Fix (the note PyTorch added to nn.Embedding's docs for this issue, PR #45595): when the weight is used in another
computation before the forward call, clone it first: `a = embedding.weight.clone() @ W.t()`. The user's own code
changes (line a); the in-place write itself is inside F.embedding. The loss is the report's with .mean() for .prod()
(the product of 14 sigmoids gives gradients near 1e-20, too small for Adam to move W in the fixed twin)."""
import torch
import torch.nn as nn

torch.manual_seed(0)
n, d, m = 3, 5, 7
batch_size = 11

embedding = nn.Embedding(n, d, max_norm=True)
W = torch.randn((m, d), requires_grad=True)
optimizer = torch.optim.Adam(list(embedding.parameters()) + [W], lr=1e-3)
W0 = W.detach().clone()

optimizer.zero_grad()
idx = torch.tensor([1, 2])

a = embedding.weight @ W.t()  # Line a  # <- inplace_saved
b = embedding(idx) @ W.t()    # Line b

out = (a.unsqueeze(0) + b.unsqueeze(1))
loss = out.sigmoid().mean()  # the report had .prod(); .mean() keeps the fixed twin trainable
loss.backward()
optimizer.step()
print("embedding.weight.grad is None:", embedding.weight.grad is None)
print("embedding.weight.grad abs sum:", embedding.weight.grad.abs().sum().item())
print("W changed:", not torch.equal(W0, W))
