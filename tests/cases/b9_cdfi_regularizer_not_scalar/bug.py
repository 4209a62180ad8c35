"""CDFI's Loss class (tding1/CDFI#15): the regularization outputs of the model come back with one value per
sample, and each effective_loss = weight * output[type] is appended as it is, so the summed loss has two elements
and loss.backward() raises "grad can be implicitly created only for scalar outputs" (the reporter sums each term)."""
import torch
import torch.nn.functional as F
from torch import nn


class Interp(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Conv2d(6, 3, 3, padding=1)

    def forward(self, f0, f1):
        out = self.net(torch.cat([f0, f1], 1))
        return {"frame_out": out, "g_Occlusion": out.pow(2).mean((1, 2, 3))}


class Loss:
    def __init__(self):
        self.regularize = [{"type": "g_Occlusion", "weight": 0.01}]

    def __call__(self, output, gt):
        losses = [F.l1_loss(output["frame_out"], gt)]
        for r in self.regularize:
            effective_loss = r["weight"] * output[r["type"]]  # <- autograd_error
            losses.append(effective_loss)
        return sum(losses)


torch.manual_seed(0)
model, criterion = Interp(), Loss()
optimizer = torch.optim.Adamax(model.parameters(), lr=1e-3)
f0, f1, gt = torch.rand(2, 3, 16, 16), torch.rand(2, 3, 16, 16), torch.rand(2, 3, 16, 16)
for step in range(3):
    loss = criterion(model(f0, f1), gt)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
