# Shape of nyukat/breast_cancer_classifier#56: a user writes a training loop around
# the repo's run_model(). The per-view outputs go through compute_batch_predictions,
# which exponentiates them as NumPy arrays; the per-label probabilities are averaged
# over the views, and the result is rewrapped with torch.tensor(..., requires_grad=True)
# so that backward() runs. The model's weights get no gradient.
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

VIEWS = ["L-CC", "R-CC", "L-MLO", "R-MLO"]


class SplitViewModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Linear(16, 8)
        self.heads = nn.ModuleDict({v.replace("-", "_"): nn.Linear(8, 4) for v in VIEWS})

    def forward(self, x):
        out = {}
        for v in VIEWS:
            h = F.relu(self.trunk(x[v]))
            logits = self.heads[v.replace("-", "_")](h).view(-1, 2, 2)  # (N, label, class)
            out[v] = F.log_softmax(logits, dim=-1)
        return out


def compute_batch_predictions(y_hat):
    return {k: torch.exp(v) for k, v in y_hat.items()}


model = SplitViewModel()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
loss_fn = nn.BCELoss()

x = {v: torch.randn(4, 16) for v in VIEWS}
gt = torch.randint(0, 2, (4, 2)).float()

for step in range(2):
    optimizer.zero_grad()
    output = model(x)
    batch_predictions = compute_batch_predictions(output)
    predictions = sum(p[:, :, 1] for p in batch_predictions.values()) / len(VIEWS)
    l = loss_fn(predictions, gt)
    l.backward()
    optimizer.step()
    print(step, l.item(), model.trunk.weight.grad)
