# RPN head with num_convs=2 (mmdetection RPNHead, rpn-2conv config), trained on two FPN levels.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class ConvModule(nn.Module):
    """conv -> act, like mmcv.cnn.ConvModule(..., inplace=False)."""

    def __init__(self, in_channels, out_channels, kernel_size, padding=0, inplace=False):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=padding)
        self.activate = nn.ReLU(inplace=inplace)

    def forward(self, x):
        return self.activate(self.conv(x))


class RPNHead(nn.Module):
    def __init__(self, in_channels=8, feat_channels=8, num_anchors=3, num_convs=2):
        super().__init__()
        self.num_convs = num_convs
        if self.num_convs > 1:
            rpn_convs = []
            for i in range(self.num_convs):
                c_in = in_channels if i == 0 else feat_channels
                rpn_convs.append(ConvModule(c_in, feat_channels, 3, padding=1, inplace=False))
            self.rpn_conv = nn.Sequential(*rpn_convs)
        else:
            self.rpn_conv = nn.Conv2d(in_channels, feat_channels, 3, padding=1)
        self.rpn_cls = nn.Conv2d(feat_channels, num_anchors, 1)
        self.rpn_reg = nn.Conv2d(feat_channels, num_anchors * 4, 1)

    def forward_single(self, x):
        x = self.rpn_conv(x)
        x = F.relu(x, inplace=True)  # <- inplace_saved
        rpn_cls_score = self.rpn_cls(x)
        rpn_bbox_pred = self.rpn_reg(x)
        return rpn_cls_score, rpn_bbox_pred

    def forward(self, feats):
        return [self.forward_single(f) for f in feats]

    def loss(self, outs, cls_targets, reg_targets):
        loss_cls, loss_bbox = 0.0, 0.0
        for (cls_score, bbox_pred), ct, rt in zip(outs, cls_targets, reg_targets):
            loss_cls = loss_cls + F.binary_cross_entropy_with_logits(cls_score, ct)
            loss_bbox = loss_bbox + F.l1_loss(bbox_pred, rt)
        return dict(loss_rpn_cls=loss_cls, loss_rpn_bbox=loss_bbox)


head = RPNHead()
optimizer = torch.optim.SGD(head.parameters(), lr=0.02, momentum=0.9)

# two FPN levels
feats = [torch.randn(2, 8, 16, 16), torch.randn(2, 8, 8, 8)]
cls_targets = [torch.randint(0, 2, (2, 3, 16, 16)).float(), torch.randint(0, 2, (2, 3, 8, 8)).float()]
reg_targets = [torch.randn(2, 12, 16, 16), torch.randn(2, 12, 8, 8)]

for it in range(3):
    outs = head(feats)
    losses = head.loss(outs, cls_targets, reg_targets)
    loss = sum(v for v in losses.values())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"iter {it}: loss_rpn_cls={losses['loss_rpn_cls'].item():.4f} "
          f"loss_rpn_bbox={losses['loss_rpn_bbox'].item():.4f}")
print("rpn_conv[0].conv.weight.grad is None:", head.rpn_conv[0].conv.weight.grad is None)
