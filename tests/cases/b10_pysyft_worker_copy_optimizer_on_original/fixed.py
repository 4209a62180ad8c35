"""The fixed twin: each worker's copy gets its own optimizer (OpenMined/PySyft#2207)."""
import copy

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 4))
workers = {"bob": (torch.randn(64, 20), torch.randint(0, 4, (64,))),
           "alice": (torch.randn(64, 20), torch.randint(0, 4, (64,)))}
for epoch in range(2):
    for name, (data, target) in workers.items():
        worker_model = copy.deepcopy(model)
        optimizer = torch.optim.SGD(worker_model.parameters(), lr=0.1)
        for batch_idx in range(6):
            optimizer.zero_grad()
            loss = F.cross_entropy(worker_model(data), target)
            loss.backward()
            optimizer.step()
            if batch_idx in (0, 5):
                print(f"epoch {epoch} {name} batch {batch_idx}: loss {loss.item():.6f}")
