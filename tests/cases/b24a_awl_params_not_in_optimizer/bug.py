"""Mikoto10032/AutomaticWeightedLoss issue #3 "The weight doesn't change. It's always 1.",
https://github.com/Mikoto10032/AutomaticWeightedLoss/issues/3: a network with 5 tasks and two kinds of loss
(nn.MSELoss for the point tasks, a Dice loss for the segmentation tasks) combined by AutomaticWeightedLoss
(learned uncertainty weights, Liebel & Koerner 2018); the user saw awl.params stay exactly 1 for the whole run.
awl is a separate nn.Module, so its `params` are not in model.parameters(); the optimizer was built from
model.parameters() only. loss_sum.backward() does fill awl.params.grad, but no optimizer ever steps it.
Fix (the maintainer's answer): put the AutomaticWeightedLoss parameters in the optimizer too, e.g.
optim.Adam([{'params': model.parameters()}, {'params': awl.parameters(), 'weight_decay': 0}]).
AutomaticWeightedLoss is the repo's module, copied (with torch.ones(num) for its `num=2` typo)."""
import torch
import torch.nn as nn
from torch import optim

torch.manual_seed(0)
torch.set_num_threads(1)


# --- AutomaticWeightedLoss.py (the repo's module) ---------------------------------------------------
class AutomaticWeightedLoss(nn.Module):
    def __init__(self, num=2):
        super(AutomaticWeightedLoss, self).__init__()
        params = torch.ones(num, requires_grad=True)
        self.params = torch.nn.Parameter(params)

    def forward(self, *x):
        loss_sum = 0
        for i, loss in enumerate(x):
            loss_sum += 0.5 / (self.params[i] ** 2) * loss + torch.log(1 + self.params[i] ** 2)
        return loss_sum


def dice_loss(logits, target, eps=1.0):
    prob = torch.sigmoid(logits)
    inter = (prob * target).sum()
    return 1 - (2 * inter + eps) / (prob.sum() + target.sum() + eps)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU())
        self.point_heads = nn.ModuleList([nn.Linear(8, 2) for _ in range(3)])
        self.seg_heads = nn.ModuleList([nn.Conv2d(8, 1, 1) for _ in range(2)])

    def forward(self, x):
        f = self.backbone(x)
        pooled = f.mean(dim=(2, 3))
        return [h(pooled) for h in self.point_heads], [h(f) for h in self.seg_heads]


model = Model()
awl = AutomaticWeightedLoss(5)  # we have 5 losses
point_loss = nn.MSELoss()
optimizer = optim.Adam(model.parameters(), lr=1e-2)  # <- optimizer

images = torch.randn(6, 4, 1, 16, 16)
points = torch.randn(6, 4, 3, 2)
masks = (torch.rand(6, 4, 2, 1, 16, 16) > 0.5).float()

for epoch in range(6):
    pred_points, pred_segs = model(images[epoch])
    losses = [point_loss(pred_points[k], points[epoch][:, k]) for k in range(3)]
    losses += [dice_loss(pred_segs[k], masks[epoch][:, k]) for k in range(2)]
    loss_sum = awl(*losses)
    optimizer.zero_grad()
    loss_sum.backward()
    optimizer.step()

print("awl.params:", awl.params.detach().tolist())
print("awl.params still all 1:", torch.equal(awl.params.detach(), torch.ones(5)))
