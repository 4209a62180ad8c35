"""Federated training with PySyft (OpenMined/PySyft#2207): each worker trains `bobmodel = model.copy().send(...)`,
but the optimizer was built once, on the central model's parameters; backward fills the copy's gradients,
optimizer.step() updates the central model, which has none, and the printed loss stays where it started (the fix
builds an optimizer for each worker's copy). copy.deepcopy stands in for model.copy().send(worker)."""
import copy

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
workers = {"bob": (torch.randn(64, 20), torch.randint(0, 4, (64,))),
           "alice": (torch.randn(64, 20), torch.randint(0, 4, (64,)))}
for epoch in range(2):
    for name, (data, target) in workers.items():
        worker_model = copy.deepcopy(model)  # <- optimizer
        for batch_idx in range(6):
            optimizer.zero_grad()
            loss = F.cross_entropy(worker_model(data), target)
            loss.backward()
            optimizer.step()
            if batch_idx in (0, 5):
                print(f"epoch {epoch} {name} batch {batch_idx}: loss {loss.item():.6f}")
