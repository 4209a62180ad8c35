"""Trains a tiny linear model from a DataLoader with two worker processes (all under the main guard)."""
import torch
from torch.utils.data import DataLoader, TensorDataset


def main():
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    loader = DataLoader(data, batch_size=8, num_workers=2)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = 0
    for inputs, targets in loader:
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(inputs), targets).backward()
        optimizer.step()
        batches += 1
    print(f"batches: {batches}")
    print(f"weight got a gradient: {model.weight.grad is not None}")


if __name__ == "__main__":
    main()
