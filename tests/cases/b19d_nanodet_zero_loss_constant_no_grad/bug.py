"""NanoDet (RangiLyu/nanodet#7, https://github.com/RangiLyu/nanodet/issues/7): after changing the warmup steps
from 300 to 30, training stops in warm_up -> run_step at loss.backward() with "RuntimeError: element 0 of tensors
does not require grad and does not have a grad_fn".
Why: GFLHead.loss (nanodet/model/head/gfl_head.py) replaces all three losses by fresh constants
`torch.tensor(0, dtype=torch.float32).cuda()` when avg_factor <= 0 (no positive cells in the batch, or their
scores are all 0); the summed loss then has no graph and backward refuses it.
Fix (from the thread, "Solved it by add requires_grad=True in the three lines", kept in later gfl_head.py):
torch.tensor(0, dtype=torch.float32, requires_grad=True) for loss_qfl, loss_bbox and loss_dfl."""
import torch
import torch.nn.functional as F
from torch import nn


class GFLHead(nn.Module):
    """NanoDet's GFL head in short: one cls conv and one reg conv on one level, QFL/GIoU/DFL replaced by simple
    stand-ins; loss() keeps the avg_factor branch of gfl_head.py."""
    def __init__(self, num_classes=2, in_channels=8, reg_max=7):
        super().__init__()
        self.num_classes = num_classes
        self.gfl_cls = nn.Conv2d(in_channels, num_classes, 3, padding=1)
        self.gfl_reg = nn.Conv2d(in_channels, 4 * (reg_max + 1), 3, padding=1)

    def forward(self, feat):
        return self.gfl_cls(feat), self.gfl_reg(feat)

    def loss_single(self, cls_score, bbox_pred, labels):
        cls_score = cls_score.permute(0, 2, 3, 1).reshape(-1, self.num_classes)
        bbox_pred = bbox_pred.permute(0, 2, 3, 1).reshape(-1, bbox_pred.shape[1])
        labels = labels.reshape(-1)
        pos_inds = torch.nonzero((labels >= 0) & (labels < self.num_classes), as_tuple=False).squeeze(1)
        if len(pos_inds) > 0:
            weight_targets = cls_score.detach().sigmoid().max(dim=1)[0][pos_inds]
            loss_bbox = (bbox_pred[pos_inds].pow(2).mean(1) * weight_targets).sum()
            loss_dfl = (bbox_pred[pos_inds].abs().mean(1) * weight_targets).sum()
        else:
            loss_bbox = bbox_pred.sum() * 0
            loss_dfl = bbox_pred.sum() * 0
            weight_targets = torch.tensor(0)
        target = F.one_hot(labels, self.num_classes + 1)[:, :self.num_classes].float()
        loss_qfl = F.binary_cross_entropy_with_logits(cls_score, target, reduction='sum') / max(len(pos_inds), 1)
        return loss_qfl, loss_bbox, loss_dfl, weight_targets.sum()

    def loss(self, preds, gt_labels):
        cls_scores, bbox_preds = preds
        losses_qfl, losses_bbox, losses_dfl, avg_factor = self.loss_single(cls_scores, bbox_preds, gt_labels)
        avg_factor = avg_factor.item()
        if avg_factor <= 0:
            loss_qfl = torch.tensor(0, dtype=torch.float32)  # <- autograd_error
            loss_bbox = torch.tensor(0, dtype=torch.float32)
            loss_dfl = torch.tensor(0, dtype=torch.float32)
        else:
            loss_bbox = losses_bbox / avg_factor
            loss_dfl = losses_dfl / avg_factor
            loss_qfl = losses_qfl
        loss = loss_qfl + loss_bbox + loss_dfl
        loss_states = dict(loss_qfl=loss_qfl, loss_bbox=loss_bbox, loss_dfl=loss_dfl)
        return loss, loss_states


torch.manual_seed(0)
backbone = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU())
head = GFLHead()
model = nn.ModuleDict({'backbone': backbone, 'head': head})
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
before = head.gfl_cls.weight.detach().clone()
for step in range(4):
    img = torch.randn(2, 3, 8, 8)
    labels = torch.full((2, 4, 4), 2)  # background everywhere
    if step != 2:  # batch 2 has no positive cells (e.g. images without boxes)
        labels[:, 1, 2] = step % 2
    loss, loss_states = head.loss(head(backbone(img)), labels)
    optimizer.zero_grad()
    loss.backward()  # Trainer.run_step
    optimizer.step()
    print(f"warmup step {step} loss {loss.item():.4f}")
print("head weights changed:", not torch.equal(before, head.gfl_cls.weight))
