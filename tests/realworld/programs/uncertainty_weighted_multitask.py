"""Multi-task learning with learned homoscedastic-uncertainty loss weights (Kendall, Gal & Cipolla 2018,
in the positive-regularised form of Liebel & Koerner 2018), reduced from Mikoto10032/AutomaticWeightedLoss
(AutomaticWeightedLoss.py and the training example in its README,
https://github.com/Mikoto10032/AutomaticWeightedLoss): a separate nn.Module holding one learned weight
per task, `loss_sum += 0.5 / params[i] ** 2 * loss_i + log(1 + params[i] ** 2)`, trained jointly with
the model by one Adam whose second param group holds only awl.parameters() with weight_decay 0.
The model is a shared encoder with a segmentation-style classification head and a depth-style
regression head.

Suspicious-but-correct patterns kept: the loss weights are not part of the model - they live in a
separate loss module whose Parameter is built from torch.ones(num, requires_grad=True) and reach the
optimizer only through their own param group; the weighted sum starts from the Python int 0 and is
accumulated with +=; the per-task losses are only logged (.item()) and the current task weights are
read with .detach() for printing; the uncertainty term log(1 + p^2) has no data dependence.
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class AutomaticWeightedLoss(nn.Module):
    """automatically weighted multi-task loss"""

    def __init__(self, num=2):
        super().__init__()
        params = torch.ones(num, requires_grad=True)
        self.params = torch.nn.Parameter(params)

    def forward(self, *x):
        loss_sum = 0
        for i, loss in enumerate(x):
            loss_sum += 0.5 / (self.params[i] ** 2) * loss + torch.log(1 + self.params[i] ** 2)
        return loss_sum


class MultiTaskNet(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
            nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
        )
        self.seg_head = nn.Conv2d(8, num_classes, 1)
        self.depth_head = nn.Conv2d(8, 1, 1)

    def forward(self, x):
        feat = self.encoder(x)
        return self.seg_head(feat), self.depth_head(feat)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = MultiTaskNet()
    awl = AutomaticWeightedLoss(2)  # we have 2 losses
    loss_1 = nn.CrossEntropyLoss()
    loss_2 = nn.L1Loss()
    # learnable parameters
    optimizer = torch.optim.Adam([
        {"params": model.parameters(), "weight_decay": 1e-4},
        {"params": awl.parameters(), "weight_decay": 0},
    ], lr=1e-2)
    data = [(torch.randn(4, 3, 8, 8), torch.randint(0, 4, (4, 8, 8)), torch.rand(4, 1, 8, 8) * 5)
            for _ in range(3)]
    model.train()
    for step in range(6):
        image, label1, label2 = data[step % 3]
        # forward
        pred1, pred2 = model(image)
        # calculate losses
        loss1 = loss_1(pred1, label1)
        loss2 = loss_2(pred2, label2)
        # weigh losses
        loss = awl(loss1, loss2)
        # backward
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        w = awl.params.detach()
        print(f"step {step} loss {loss.item():.6f} seg {loss1.item():.4f} depth {loss2.item():.4f} "
              f"weights {w[0].item():.4f} {w[1].item():.4f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict(), "awl": awl.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
