"""A map-style Dataset with transforms, DataLoader(num_workers=2, shuffle, seeded generator,
worker_init_fn), validation with accuracy, best-model checkpoint kept with copy.deepcopy(state_dict)."""
import copy
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Blobs(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, 6, generator=g)
        self.y = (self.x[:, 0] + self.x[:, 1] > 0).long()

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return (self.x[i] - 0.5) * 2, self.y[i]


def seed_worker(worker_id):
    torch.manual_seed(torch.initial_seed() % 2**32)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    train_loader = DataLoader(Blobs(64, 1), batch_size=16, shuffle=True, num_workers=2,
                              worker_init_fn=seed_worker, generator=torch.Generator().manual_seed(0))
    val_loader = DataLoader(Blobs(32, 2), batch_size=16)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
    best_acc, best_state = 0.0, None
    for epoch in range(2):
        model.train()
        for i, (inputs, labels) in enumerate(train_loader):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(inputs), labels)
            loss.backward()
            optimizer.step()
            print(f"epoch {epoch} batch {i} loss {loss.item():.6f}")
        model.eval()
        correct = 0
        with torch.no_grad():
            for inputs, labels in val_loader:
                _, preds = torch.max(model(inputs), 1)
                correct += torch.sum(preds == labels.data).item()
        acc = correct / 32
        print(f"epoch {epoch} val acc {acc:.4f}")
        if acc >= best_acc:
            best_acc, best_state = acc, copy.deepcopy(model.state_dict())
    model.load_state_dict(best_state)
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
