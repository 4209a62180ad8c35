"""PyTorch forums, "Optimize Masking Parameter" (https://discuss.pytorch.org/t/optimize-masking-parameter/204381):
the user wants to learn a threshold and keeps only the points whose norm is below it,
`loss = X[X.norm(dim=1) < threshold].norm(dim=1).mean()`; after backward `threshold.grad is None`, so the optimizer
never moves it (the points themselves do get a gradient). The comparison makes a boolean mask, which carries no
gradient, and indexing with it only selects values. Fix (K. Frank's answer): a soft mask,
`soft_mask = torch.sigmoid(hard * (threshold - X_norm))`, and a weighted mean `(soft_mask * X_norm).sum() / soft_mask.sum()`."""
import torch
import torch.nn as nn


class PointSelector(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(4, 3)
        self.threshold = nn.Parameter(torch.tensor(1.5))

    def forward(self, feats):
        X = self.encoder(feats)
        X_norm = X.norm(dim=1)
        kept = X_norm[X_norm < self.threshold]  # <- non_differentiable
        return kept.mean()


torch.manual_seed(0)
model = PointSelector()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
feats = torch.randn(200, 4)
for step in range(5):
    optimizer.zero_grad()
    loss = model(feats)
    loss.backward()
    optimizer.step()
print("threshold.grad:", model.threshold.grad)
print("threshold:", model.threshold.item())
