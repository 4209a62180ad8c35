"""The fixed twin: the augmentation runs under torch.no_grad(), so the resized images are normal tensors the
backbone can save for backward."""
import random

import torch
import torch.nn.functional as F
from torch import nn


class LWDETR(nn.Module):
    def __init__(self, num_queries=4, num_classes=3):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2))
        self.class_embed = nn.Linear(32, num_queries * num_classes)
        self.bbox_embed = nn.Linear(32, num_queries * 4)
        self.num_queries, self.num_classes = num_queries, num_classes

    def forward(self, samples):
        features = self.backbone(samples).flatten(1)
        logits = self.class_embed(features).view(-1, self.num_queries, self.num_classes)
        boxes = self.bbox_embed(features).view(-1, self.num_queries, 4).sigmoid()
        return {"pred_logits": logits, "pred_boxes": boxes}


def criterion(outputs, targets):
    loss_ce = F.cross_entropy(outputs["pred_logits"].flatten(0, 1), targets["labels"].flatten())
    loss_bbox = F.l1_loss(outputs["pred_boxes"], targets["boxes"])
    return loss_ce + 5 * loss_bbox


def train_one_epoch(model, optimizer, batches, scales=(24, 32)):
    for samples, targets in batches:
        if scales:
            scale = random.choice(scales)
            with torch.no_grad():
                new_samples = F.interpolate(samples, size=(scale, scale), mode="bilinear", align_corners=False)
        else:
            new_samples = samples
        outputs = model(new_samples)
        loss = criterion(outputs, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"scale {new_samples.shape[-1]}: loss {loss.item():.4f}")


random.seed(0)
torch.manual_seed(0)
model = LWDETR()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
batches = [(torch.randn(2, 3, 28, 28), {"labels": torch.randint(0, 3, (2, 4)), "boxes": torch.rand(2, 4, 4)}) for _ in range(3)]
train_one_epoch(model, optimizer, batches)
