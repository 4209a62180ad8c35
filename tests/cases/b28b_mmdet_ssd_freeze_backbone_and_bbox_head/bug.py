"""mmdetection issue #3667, "Freezing the backbone network will report an error",
https://github.com/open-mmlab/mmdetection/issues/3667: to fine-tune a single-stage detector with a frozen
backbone, the user added two loops to SingleStageDetector.__init__ (single_stage.py), one setting
requires_grad = False on self.backbone's parameters and one on self.bbox_head's. The detector (SSD-style, no
neck) then has no trainable parameter left, the summed loss carries no graph, and mmcv's OptimizerHook fails at
runner.outputs['loss'].backward() with PyTorch's "element 0 of tensors does not require grad and does not have a
grad_fn". Fix: freeze only the backbone; the bbox_head is what the fine-tuning trains.
The thread shows the user's code and traceback; its tail and any reply are not visible, so the no-neck model is
inferred from the error. Shrunk: a 2-stage VGG-like backbone, a 2-level SSD head, random images and targets; the
mmcv runner is written out as a plain loop (train_step, _parse_losses, OptimizerHook)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)


class SSDVGG(nn.Module):
    def __init__(self):
        super().__init__()
        self.stage1 = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.stage2 = nn.Sequential(nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))

    def forward(self, x):
        c1 = self.stage1(x)
        return (c1, self.stage2(c1))


class SSDHead(nn.Module):
    def __init__(self, in_channels=(16, 32), num_anchors=4, num_classes=5):
        super().__init__()
        self.num_classes = num_classes
        self.cls_convs = nn.ModuleList(nn.Conv2d(c, num_anchors * (num_classes + 1), 3, padding=1) for c in in_channels)
        self.reg_convs = nn.ModuleList(nn.Conv2d(c, num_anchors * 4, 3, padding=1) for c in in_channels)

    def forward_train(self, feats, gt_labels, gt_bboxes):
        cls_scores = torch.cat([c(f).permute(0, 2, 3, 1).reshape(f.size(0), -1, self.num_classes + 1)
                                for c, f in zip(self.cls_convs, feats)], 1)
        bbox_preds = torch.cat([r(f).permute(0, 2, 3, 1).reshape(f.size(0), -1, 4)
                                for r, f in zip(self.reg_convs, feats)], 1)
        loss_cls = F.cross_entropy(cls_scores.reshape(-1, self.num_classes + 1), gt_labels.reshape(-1))
        loss_bbox = F.smooth_l1_loss(bbox_preds, gt_bboxes)
        return dict(loss_cls=loss_cls, loss_bbox=loss_bbox)


class SingleStageDetector(nn.Module):
    def __init__(self, backbone, neck=None, bbox_head=None):
        super().__init__()
        self.backbone = backbone
        self.neck = neck
        self.bbox_head = bbox_head
        for v in self.backbone.parameters():
            v.requires_grad = False

        for v in self.bbox_head.parameters():
            v.requires_grad = False  # <- autograd_error

    def extract_feat(self, img):
        x = self.backbone(img)
        if self.neck is not None:
            x = self.neck(x)
        return x

    def forward_train(self, img, gt_labels, gt_bboxes):
        return self.bbox_head.forward_train(self.extract_feat(img), gt_labels, gt_bboxes)

    def train_step(self, data):
        losses = self.forward_train(**data)
        loss = sum(v for v in losses.values())  # _parse_losses
        return dict(loss=loss)


model = SingleStageDetector(SSDVGG(), neck=None, bbox_head=SSDHead())
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
head_before = model.bbox_head.cls_convs[0].weight.detach().clone()
n_anchors = 4 * (8 * 8 + 4 * 4)
data_loader = [dict(img=torch.randn(2, 3, 16, 16), gt_labels=torch.randint(0, 6, (2, n_anchors)),
                    gt_bboxes=torch.randn(2, n_anchors, 4)) for _ in range(3)]

for data in data_loader:
    outputs = model.train_step(data)
    optimizer.zero_grad()  # OptimizerHook.after_train_iter
    outputs['loss'].backward()
    optimizer.step()

print("bbox_head cls conv changed:", not torch.equal(head_before, model.bbox_head.cls_convs[0].weight))
