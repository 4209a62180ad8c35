"""https://github.com/Lightning-AI/torchmetrics/issues/1677

The user trained a multilabel classifier with torchmetrics' MultilabelRankingAveragePrecision as the loss
(maximising label ranking average precision, so loss = 1 - LRAP). backward() failed with "RuntimeError:
element 0 of tensors does not require grad and does not have a grad_fn", and the user concluded that the
metric "turns off grad automatically" (MeanSquaredError kept its grad_fn). The metric is not switched off:
torchmetrics runs its forward with grad enabled, but LRAP is computed from the *ranks* of the scores
(argsort/unique, integer positions) accumulated into a fresh torch.tensor(0.0), so nothing in the result
depends differentiably on the predictions (the class declares is_differentiable = False). Fix: train with a
differentiable multilabel loss (BCEWithLogitsLoss) and keep the ranking metric for monitoring.
"""
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import torch
import torch.nn as nn
from torchmetrics.classification import MultilabelRankingAveragePrecision


def main():
    torch.manual_seed(42)
    torch.set_num_threads(1)
    num_labels = 5
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, num_labels))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    mlrap = MultilabelRankingAveragePrecision(num_labels=num_labels)
    criterion = nn.BCEWithLogitsLoss()
    data = [(torch.randn(8, 16), torch.randint(2, (8, num_labels))) for _ in range(3)]
    for step, (x, target) in enumerate(data):
        preds = model(x)
        loss = 1.0 - mlrap(preds, target)  # <- non_differentiable
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.6f} lrap {mlrap(preds.detach(), target).item():.4f}")
    print("last layer grad is None:", model[2].weight.grad is None)
    if os.environ.get("REALWORLD_STATE"):
        torch.save({n: p.detach().clone() for n, p in model.named_parameters()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
