"""MONAI's CopyItemsd applied to a model output (Project-MONAI/MONAI#1178): a post transform copies the network's
prediction in the batch dict with copy.deepcopy(d[key]), so that one copy can be activated and thresholded for
display while the loss uses the other; the prediction is the output of the network, not a graph leaf, so deepcopy
raises "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at the moment"
(the fix copies tensors with .detach().clone())."""
import copy

import torch
import torch.nn.functional as F
from torch import nn


class CopyItemsd:
    def __init__(self, keys, names):
        self.keys, self.names = keys, names

    def __call__(self, data):
        d = dict(data)
        for key, new_key in zip(self.keys, self.names):
            d[new_key] = copy.deepcopy(d[key])  # <- autograd_error
        return d


class Activationsd:
    def __init__(self, keys):
        self.keys = keys

    def __call__(self, data):
        d = dict(data)
        for key in self.keys:
            d[key] = (torch.sigmoid(d[key]) > 0.5).float()
        return d


def dice_loss(pred, label, eps=1e-5):
    p = torch.sigmoid(pred)
    return 1 - (2 * (p * label).sum() + eps) / (p.sum() + label.sum() + eps)


torch.manual_seed(0)
net = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 1, 3, padding=1))
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
post_transforms = [CopyItemsd(keys=["pred"], names=["pred_display"]), Activationsd(keys=["pred_display"])]
for step in range(3):
    batch = {"image": torch.randn(2, 1, 16, 16), "label": (torch.rand(2, 1, 16, 16) > 0.5).float()}
    batch["pred"] = net(batch["image"])
    for transform in post_transforms:
        batch = transform(batch)
    loss = dice_loss(batch["pred"], batch["label"]) + F.binary_cross_entropy_with_logits(batch["pred"], batch["label"])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}, foreground shown {batch['pred_display'].mean().item():.3f}")
