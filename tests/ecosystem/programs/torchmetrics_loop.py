"""torchmetrics in a plain loop, as its docs show: a MetricCollection (Accuracy, F1Score, AUROC)
updated with the training logits each step, MeanMetric for the running loss fed the loss tensor
itself, compute() and reset() per epoch, and a functional metric on a validation batch."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchmetrics
from torchmetrics import MetricCollection
from torchmetrics.classification import MulticlassAccuracy, MulticlassAUROC, MulticlassF1Score


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    metrics = MetricCollection({"acc": MulticlassAccuracy(num_classes=3), "f1": MulticlassF1Score(num_classes=3),
                                "auroc": MulticlassAUROC(num_classes=3)})
    mean_loss = torchmetrics.MeanMetric()
    data = [(torch.randn(8, 6), torch.randint(0, 3, (8,))) for _ in range(3)]
    for epoch in range(2):
        for x, y in data:
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            metrics.update(logits.softmax(dim=-1), y)
            mean_loss.update(loss)
        values = metrics.compute()
        print(f"epoch {epoch} loss {mean_loss.compute().item():.6f} "
              + " ".join(f"{k} {v.item():.4f}" for k, v in sorted(values.items())))
        metrics.reset()
        mean_loss.reset()
    with torch.no_grad():
        val = torchmetrics.functional.accuracy(model(data[0][0]), data[0][1], task="multiclass", num_classes=3)
    print(f"val accuracy {val.item():.4f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
