"""Phaseformer's dynamically weighted loss (Mdraqibkhan/Phaseformer#7): the loss module holds its weights as
nn.Parameter(torch.rand(1, num_weights)), but optimizer_g is built from net_g.parameters() alone, so the weights get
gradients and are never learned."""
import torch
import torch.nn.functional as F
from torch import nn


class WeightedLoss(nn.Module):
    def __init__(self, num_weights=3):
        super().__init__()
        self.weights = nn.Parameter(torch.rand(1, num_weights))

    def forward(self, losses):
        w = torch.softmax(self.weights, dim=1)[0]
        return sum(wi * li for wi, li in zip(w, losses))


torch.manual_seed(0)
net_g = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 3, 3, padding=1))
criterion = WeightedLoss()
optimizer_g = torch.optim.Adam(net_g.parameters(), lr=1e-3, betas=(0.5, 0.999))  # <- optimizer
inp, target = torch.rand(4, 3, 16, 16), torch.rand(4, 3, 16, 16)
before = criterion.weights.detach().clone()
for step in range(20):
    out = net_g(inp)
    losses = [F.l1_loss(out, target), F.mse_loss(out, target), (1 - F.cosine_similarity(out, target, dim=1)).mean()]
    loss = criterion(losses)
    optimizer_g.zero_grad()
    criterion.zero_grad()
    loss.backward()
    optimizer_g.step()
print("loss weights have grad:", criterion.weights.grad is not None, "learned:", not torch.equal(before, criterion.weights))
