"""open-mmlab/mmaction2 (TPN recognizer), https://github.com/open-mmlab/mmaction2/issues/682

What the user saw: the TPN configs set aux_head_cfg, so the neck's auxiliary head should be trained by
its auxiliary loss, but in Recognizer2D.forward_train the neck is called as `x, _ = self.neck(x, labels)`
and the aux loss "does not seem to be used"; the aux head's weights never get a gradient.
Why: TPN.forward returns (out, loss_aux); forward_train throws loss_aux away, so it never reaches the
losses dict that is summed and backpropagated; the aux head runs in every forward but is never trained.
Fix (the maintainers, PR #683): `x, loss_aux = self.neck(x, labels.squeeze())` and
`losses.update(loss_aux)`.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class AuxHead(nn.Module):
    def __init__(self, in_channels, num_classes, loss_weight=0.5):
        super().__init__()
        self.fc = nn.Linear(in_channels, num_classes)
        self.loss_weight = loss_weight

    def forward(self, x, target):
        return dict(loss_aux=self.loss_weight * F.cross_entropy(self.fc(x.mean(dim=(2, 3, 4))), target))


class TPN(nn.Module):
    def __init__(self, in_channels, num_classes):
        super().__init__()
        self.fuse = nn.Conv3d(in_channels, in_channels, 1)
        self.aux_head = AuxHead(in_channels, num_classes)

    def forward(self, x, target=None):
        loss_aux = self.aux_head(x, target) if target is not None else dict()
        return self.fuse(x), loss_aux


class Recognizer2D(nn.Module):
    def __init__(self, num_classes=4, channels=8):
        super().__init__()
        self.backbone = nn.Conv2d(3, channels, 3, padding=1)
        self.neck = TPN(channels, num_classes)
        self.cls_head = nn.Linear(channels, num_classes)

    def forward_train(self, imgs, labels):
        batches = imgs.shape[0]
        imgs = imgs.reshape((-1, ) + imgs.shape[2:])
        num_segs = imgs.shape[0] // batches
        losses = dict()
        x = self.backbone(imgs)
        x = x.reshape((-1, num_segs) + x.shape[1:]).transpose(1, 2).contiguous()
        x, loss_aux = self.neck(x, labels.squeeze())
        losses.update(loss_aux)
        cls_score = self.cls_head(x.mean(dim=(2, 3, 4)))
        losses['loss_cls'] = F.cross_entropy(cls_score, labels.squeeze())
        return losses


model = Recognizer2D()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
imgs = torch.randn(2, 3, 3, 8, 8)  # batch, segments, C, H, W
labels = torch.tensor([[1], [3]])

for step in range(3):
    optimizer.zero_grad()
    losses = model.forward_train(imgs, labels)
    loss = sum(v for v in losses.values())
    loss.backward()
    optimizer.step()
    print(step, {k: round(v.item(), 4) for k, v in losses.items()})
print("neck.aux_head.fc.weight.grad:", model.neck.aux_head.fc.weight.grad)
