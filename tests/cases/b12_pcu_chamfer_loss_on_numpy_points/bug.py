"""Chamfer distance from point-cloud-utils as a training loss (fwilliams/point-cloud-utils#78): pcu's functions take
only NumPy arrays (torch tensors raise "incompatible function arguments"), so the user converts the predicted cloud
with `.detach().cpu().numpy()` and wraps the distance back into a tensor: "the calculated loss function does not
have gradient information, so the model cannot be updated", and backward raises "element 0 of tensors does not
require grad". The fix is a chamfer distance computed in torch on the prediction itself."""
import numpy as np
import torch
from torch import nn


def chamfer_distance(a, b):  # pcu.chamfer_distance: NumPy in, float out
    d = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
    return float(np.sqrt(d.min(1)).mean() + np.sqrt(d.min(0)).mean())


class PointCompletion(nn.Module):  # PointNet encoder, fully connected decoder (PCN-style)
    def __init__(self, n_out=64):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv1d(3, 32, 1), nn.ReLU(), nn.Conv1d(32, 64, 1))
        self.decoder = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, n_out * 3))
        self.n_out = n_out

    def forward(self, partial):
        feat = self.encoder(partial.transpose(1, 2)).max(dim=2).values
        return self.decoder(feat).view(-1, self.n_out, 3)


torch.manual_seed(0)
model = PointCompletion()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
partial, complete = torch.rand(1, 32, 3), torch.rand(1, 64, 3)
for step in range(3):
    pred = model(partial)
    loss = torch.tensor(chamfer_distance(pred.detach().cpu().numpy()[0], complete.numpy()[0]))  # <- numpy
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: chamfer {loss.item():.4f}")
