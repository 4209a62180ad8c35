"""The fixed twin: the class logits are used as they are, so the cls loss trains the classification branch."""
import torch
import torch.nn.functional as F
from torch import nn


class RTMCCHead(nn.Module):
    def __init__(self, in_channels=16, num_keypoints=3, simcc_w=8, num_classes=2):
        super().__init__()
        self.final_layer = nn.Linear(in_channels, 12)
        self.cls_x = nn.Linear(12, num_keypoints * simcc_w)
        self.cls_y = nn.Linear(12, num_keypoints * simcc_w)
        self.cls_head = nn.Linear(12, num_classes)
        self.k, self.w = num_keypoints, simcc_w

    def forward(self, feats):
        x = torch.relu(self.final_layer(feats))
        pred_x = self.cls_x(x).view(-1, self.k, self.w)
        pred_y = self.cls_y(x).view(-1, self.k, self.w)
        return pred_x, pred_y, self.cls_head(x)

    def loss(self, feats, gt_x, gt_y, category_ids):
        pred_x, pred_y, pre_cls = self.forward(feats)
        cls_label = torch.tensor(category_ids, device=gt_x.device)
        pre_cls1 = pre_cls
        losses = dict()
        loss_kpt = F.cross_entropy(pred_x.flatten(0, 1), gt_x.flatten()) + F.cross_entropy(pred_y.flatten(0, 1), gt_y.flatten())
        losses.update(loss_kpt=loss_kpt)
        losses.update(loss_cls=F.cross_entropy(pre_cls1, cls_label))
        return losses


torch.manual_seed(0)
head = RTMCCHead()
optimizer = torch.optim.AdamW(head.parameters(), lr=1e-2)
feats = torch.randn(6, 16)
gt_x, gt_y = torch.randint(0, 8, (6, 3)), torch.randint(0, 8, (6, 3))
category_ids = [0, 1, 0, 1, 1, 0]
before = head.cls_head.weight.detach().clone()
for step in range(3):
    losses = head.loss(feats, gt_x, gt_y, category_ids)
    loss = sum(losses.values())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss_kpt {losses['loss_kpt'].item():.3f} loss_cls {losses['loss_cls'].item():.3f}")
print("cls_head.weight.grad:", head.cls_head.weight.grad)
print("cls_head changed:", not torch.equal(before, head.cls_head.weight))
