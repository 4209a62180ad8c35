"""Lightning Fabric gradient accumulation with ``no_backward_sync`` under the DDP strategy (one CPU process,
gloo), following https://lightning.ai/docs/fabric/stable/advanced/gradient_accumulation.html and the
``fabric.clip_gradients`` / torchmetrics sections of the Fabric docs
(https://lightning.ai/docs/fabric/stable/api/fabric_methods.html).

Patterns kept:
- ``fabric.setup_module`` / ``fabric.setup_optimizers`` called separately (the model is wrapped in
  DistributedDataParallel, the optimizer in a ``_FabricOptimizer``);
- forward *and* ``fabric.backward`` run inside ``fabric.no_backward_sync(model, enabled=is_accumulating)``:
  DDP's ``no_sync`` skips the all-reduce on the accumulating micro-batches, the gradients still accumulate
  in ``.grad`` and are synchronised on the last micro-batch;
- ``optimizer.step()`` / ``zero_grad()`` only on non-accumulating iterations, after
  ``fabric.clip_gradients(model, optimizer, max_norm=...)``;
- a torchmetrics ``MulticlassAccuracy`` updated with detached predictions inside the training loop.
"""
import os

import torch
import torch.nn.functional as F
from torch import nn
from torchmetrics.classification import MulticlassAccuracy

import lightning as L

ACCUMULATE = 2


class Net(nn.Module):
    def __init__(self, dim=10, num_classes=3):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(dim, 32), nn.LayerNorm(32), nn.GELU(), nn.Dropout(0.1))
        self.head = nn.Linear(32, num_classes)

    def forward(self, x):
        return self.head(self.body(x))


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    fabric = L.Fabric(accelerator="cpu", devices=1, strategy="ddp")
    fabric.launch()
    fabric.seed_everything(0, verbose=False)

    model = Net()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model = fabric.setup_module(model)
    optimizer = fabric.setup_optimizers(optimizer)
    metric = MulticlassAccuracy(num_classes=3).to(fabric.device)

    data = [(torch.randn(4, 10), torch.randint(0, 3, (4,))) for _ in range(4)]
    model.train()
    for iteration, (x, y) in enumerate(data):
        x, y = x.to(fabric.device), y.to(fabric.device)
        is_accumulating = (iteration + 1) % ACCUMULATE != 0
        with fabric.no_backward_sync(model, enabled=is_accumulating):
            logits = model(x)
            loss = F.cross_entropy(logits, y) / ACCUMULATE
            fabric.backward(loss)
        metric.update(logits.detach().argmax(-1), y)
        if not is_accumulating:
            fabric.clip_gradients(model, optimizer, max_norm=1.0)
            optimizer.step()
            optimizer.zero_grad()
        fabric.print(f"iter {iteration} loss {loss.item() * ACCUMULATE:.6f} step {not is_accumulating}")
    fabric.print(f"train accuracy {metric.compute().item():.3f}")

    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.module.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
