"""Twin of programs/accelerate_loop.py with one cut: the training forward runs under
no_grad (copied from the evaluation loop), so the loss has no history and backward fails."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    accelerator = Accelerator(cpu=True)
    model = nn.Sequential(nn.Linear(10, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 3))
    dataset = TensorDataset(torch.randn(24, 10), torch.randint(0, 3, (24,)))
    train_dataloader = DataLoader(dataset, batch_size=8, shuffle=True, generator=torch.Generator().manual_seed(0))
    eval_dataloader = DataLoader(dataset, batch_size=8)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2, total_steps=6)
    model, optimizer, train_dataloader, eval_dataloader, scheduler = accelerator.prepare(
        model, optimizer, train_dataloader, eval_dataloader, scheduler)
    for epoch in range(2):
        model.train()
        for inputs, targets in train_dataloader:
            optimizer.zero_grad()
            with torch.no_grad():
                outputs = model(inputs)  # <- no_grad
            loss = F.cross_entropy(outputs, targets)
            accelerator.backward(loss)
            if accelerator.sync_gradients:
                accelerator.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            accelerator.print(f"epoch {epoch} loss {loss.item():.6f}")
        model.eval()
        correct = 0
        for inputs, targets in eval_dataloader:
            with torch.no_grad():
                predictions = model(inputs).argmax(dim=-1)
            predictions, targets = accelerator.gather_for_metrics((predictions, targets))
            correct += (predictions == targets).sum().item()
        accelerator.print(f"epoch {epoch} accuracy {correct}/24")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(accelerator.unwrap_model(model).state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
