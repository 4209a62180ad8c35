"""The fixed twin of center_loss_centers_not_optimized (https://github.com/KaiyangZhou/pytorch-center-loss/issues/22)."""
import torch
import torch.nn.functional as F
from torch import nn


class CenterLoss(nn.Module):
    def __init__(self, num_classes=4, feat_dim=2):
        super().__init__()
        self.centers = nn.Parameter(torch.randn(num_classes, feat_dim))

    def forward(self, x, labels):
        return ((x - self.centers[labels]) ** 2).sum(1).mean()


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
classifier = nn.Linear(2, 4)
criterion_cent = CenterLoss()
optimizer = torch.optim.SGD([*model.parameters(), *classifier.parameters(), *criterion_cent.parameters()], lr=0.1)
x, y = torch.randn(64, 8), torch.randint(0, 4, (64,))
before = criterion_cent.centers.clone()
for step in range(20):
    feats = model(x)
    loss = F.cross_entropy(classifier(feats), y) + 0.1 * criterion_cent(feats, y)
    optimizer.zero_grad()
    criterion_cent.zero_grad()
    loss.backward()
    optimizer.step()
print("centers moved:", not torch.equal(before, criterion_cent.centers))
