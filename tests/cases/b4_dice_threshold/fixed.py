"""The fixed twin: the loss uses the soft probabilities (threshold=None); thresholding is for metrics."""
import torch
from torch import nn


def _threshold(x, threshold=None):
    if threshold is not None:
        return (x > threshold).type(x.dtype)
    return x


def f_score(pr, gt, beta=1, eps=1e-7, threshold=None):
    pr = torch.sigmoid(pr)
    pr = _threshold(pr, threshold=threshold)
    tp = torch.sum(gt * pr)
    fp = torch.sum(pr) - tp
    fn = torch.sum(gt) - tp
    return ((1 + beta ** 2) * tp + eps) / ((1 + beta ** 2) * tp + beta ** 2 * fn + fp + eps)


class DiceLoss(nn.Module):
    def __init__(self, eps=1.0, beta=1.0, threshold=None):
        super().__init__()
        self.eps, self.beta, self.threshold = eps, beta, threshold

    def forward(self, y_pr, y_gt):
        return 1 - f_score(y_pr, y_gt, beta=self.beta, eps=self.eps, threshold=self.threshold)


torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 1, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
loss_fn = DiceLoss(threshold=None)
x, mask = torch.randn(2, 3, 8, 8), (torch.rand(2, 1, 8, 8) > 0.5).float()
for step in range(2):
    optimizer.zero_grad()
    loss = loss_fn(model(x), mask)
    loss.backward()
    optimizer.step()
    print(f"step {step}: dice loss {loss.item():.4f}")
