"""Lightning Fabric converting a raw PyTorch loop: Fabric(accelerator='cpu'), fabric.setup(model,
optimizer), setup_dataloaders, fabric.backward(loss), fabric.clip_gradients, and no_backward_sync
for gradient accumulation."""
import os

import lightning as L
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def main():
    torch.set_num_threads(1)
    fabric = L.Fabric(accelerator="cpu", devices=1)
    fabric.seed_everything(0)
    model = nn.Sequential(nn.Conv1d(2, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(8, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model, optimizer = fabric.setup(model, optimizer)
    dataloader = fabric.setup_dataloaders(
        DataLoader(TensorDataset(torch.randn(16, 2, 10), torch.randint(0, 2, (16,))), batch_size=4))
    accumulate = 2
    for i, (x, y) in enumerate(dataloader):
        is_accumulating = (i + 1) % accumulate != 0
        with fabric.no_backward_sync(model, enabled=is_accumulating):
            loss = F.cross_entropy(model(x), y) / accumulate
            fabric.backward(loss)
        if not is_accumulating:
            fabric.clip_gradients(model, optimizer, max_norm=1.0)
            optimizer.step()
            optimizer.zero_grad()
        fabric.print(f"batch {i} loss {loss.item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
