"""Lightning-AI/torchmetrics, issue #388 "Classification metrics do not return grad".
https://github.com/Lightning-AI/torchmetrics/issues/388

What the user saw: `loss = torchmetrics.AveragePrecision()(x, y); loss.backward()` raises
"RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn"
(MeanSquaredError works).
Why: average precision is built from the ranking of the predictions (argsort, the
distinct-threshold comparison) and cumulative counts of the targets; the predicted values
never enter the result differentiably, so the returned tensor has no grad_fn. The
maintainer: it is not differentiable, by design.
Fix: train with a differentiable loss (binary cross-entropy) and keep average precision
as a metric.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def binary_average_precision(preds, target):
    desc_score_indices = torch.argsort(preds, descending=True)
    preds, target = preds[desc_score_indices], target[desc_score_indices]
    distinct_value_indices = torch.where(preds[1:] - preds[:-1])[0]
    threshold_idxs = F.pad(distinct_value_indices, [0, 1], value=target.size(0) - 1)
    tps = torch.cumsum(target.float(), dim=0)[threshold_idxs]
    fps = 1 + threshold_idxs - tps
    precision = tps / (tps + fps)
    recall = tps / tps[-1]
    recall = torch.cat([torch.zeros(1), recall])
    return torch.sum((recall[1:] - recall[:-1]) * precision)


torch.manual_seed(0)
model = nn.Linear(5, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(20, 5)
y = (x[:, 0] > 0).long()
for step in range(3):
    optimizer.zero_grad()
    probs = torch.sigmoid(model(x)).squeeze(1)
    loss = 1 - binary_average_precision(probs, y)  # <- non_differentiable
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
