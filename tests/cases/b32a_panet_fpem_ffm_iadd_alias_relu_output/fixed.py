"""MMOCR (open-mmlab/mmocr) PR #884 "[Fix] Fix a bug that may cause inplace operation error",
https://github.com/open-mmlab/mmocr/pull/884 (reports #878, #648): the PANet text detector's neck
mmocr/models/textdet/necks/fpem_ffm.py runs two FPEMs and fuses their outputs (FFM). On the first
iteration it keeps the first FPEM's outputs by reference (`c2_ffm = c2`), on the second it adds the
second FPEM's outputs in place (`c2_ffm += c2`). Those tensors are the outputs of the first FPEM's
SeparableConv2d ReLUs, which ReLU saved for backward, so loss.backward() raises "one of the variables
needed for gradient computation has been modified by an inplace operation: ... output 0 of
ReluBackward0, is at version 1" (here the first to fail is c5, the 2x2 map). The PR replaced the four `+=` with `c2_ffm = c2_ffm + c2` etc.
The ResNet backbone is a few strided convs; PANHead/PANLoss are a 1x1 conv with BCE on random
text/kernel maps."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)


class SeparableConv2d(nn.Module):
    def __init__(self, in_channels, out_channels, stride=1):
        super().__init__()
        self.depthwise_conv = nn.Conv2d(in_channels, in_channels, 3, padding=1, stride=stride, groups=in_channels)
        self.pointwise_conv = nn.Conv2d(in_channels, out_channels, 1)
        self.bn = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.bn(self.pointwise_conv(self.depthwise_conv(x))))


class FPEM(nn.Module):
    def __init__(self, in_channels=16):
        super().__init__()
        self.up_add1 = SeparableConv2d(in_channels, in_channels, 1)
        self.up_add2 = SeparableConv2d(in_channels, in_channels, 1)
        self.up_add3 = SeparableConv2d(in_channels, in_channels, 1)
        self.down_add1 = SeparableConv2d(in_channels, in_channels, 2)
        self.down_add2 = SeparableConv2d(in_channels, in_channels, 2)
        self.down_add3 = SeparableConv2d(in_channels, in_channels, 2)

    def forward(self, c2, c3, c4, c5):
        c4 = self.up_add1(self._upsample_add(c5, c4))
        c3 = self.up_add2(self._upsample_add(c4, c3))
        c2 = self.up_add3(self._upsample_add(c3, c2))
        c3 = self.down_add1(self._upsample_add(c3, c2))
        c4 = self.down_add2(self._upsample_add(c4, c3))
        c5 = self.down_add3(self._upsample_add(c5, c4))
        return c2, c3, c4, c5

    def _upsample_add(self, x, y):
        return F.interpolate(x, size=y.size()[2:]) + y


class FPEM_FFM(nn.Module):
    def __init__(self, in_channels, conv_out=16, fpem_repeat=2):
        super().__init__()
        self.reduce_convs = nn.ModuleList(
            nn.Sequential(nn.Conv2d(c, conv_out, 1), nn.BatchNorm2d(conv_out), nn.ReLU()) for c in in_channels)
        self.fpems = nn.ModuleList(FPEM(conv_out) for _ in range(fpem_repeat))

    def forward(self, x):
        c2, c3, c4, c5 = [conv(f) for conv, f in zip(self.reduce_convs, x)]
        for i, fpem in enumerate(self.fpems):
            c2, c3, c4, c5 = fpem(c2, c3, c4, c5)
            if i == 0:
                c2_ffm = c2
                c3_ffm = c3
                c4_ffm = c4
                c5_ffm = c5
            else:
                c2_ffm = c2_ffm + c2
                c3_ffm = c3_ffm + c3
                c4_ffm = c4_ffm + c4
                c5_ffm = c5_ffm + c5
        size = c2_ffm.size()[-2:]
        c5 = F.interpolate(c5_ffm, size, mode='bilinear', align_corners=False)
        c4 = F.interpolate(c4_ffm, size, mode='bilinear', align_corners=False)
        c3 = F.interpolate(c3_ffm, size, mode='bilinear', align_corners=False)
        return torch.cat([c2_ffm, c3, c4, c5], dim=1)


class PANet(nn.Module):
    def __init__(self):
        super().__init__()
        chans = [8, 16, 24, 32]
        self.stages = nn.ModuleList()
        cin = 3
        for c in chans:
            self.stages.append(nn.Sequential(nn.Conv2d(cin, c, 3, stride=2, padding=1), nn.BatchNorm2d(c), nn.ReLU()))
            cin = c
        self.neck = FPEM_FFM(chans)
        self.head = nn.Conv2d(4 * 16, 6, 1)  # text, kernel, 4-d similarity vector

    def forward(self, img):
        feats = []
        x = img
        for stage in self.stages:
            x = stage(x)
            feats.append(x)
        return self.head(self.neck(feats))


torch.manual_seed(0)
model = PANet()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
w0 = model.neck.fpems[0].down_add3.pointwise_conv.weight.detach().clone()
for step in range(3):
    img = torch.randn(2, 3, 32, 32)
    gt_text = (torch.rand(2, 16, 16) > 0.7).float()
    gt_kernel = gt_text * (torch.rand(2, 16, 16) > 0.3).float()
    preds = model(img)
    loss_text = F.binary_cross_entropy_with_logits(preds[:, 0], gt_text)
    loss_kernel = F.binary_cross_entropy_with_logits(preds[:, 1], gt_kernel)
    loss = loss_text + 0.5 * loss_kernel + 0.25 * preds[:, 2:].pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print("step", step, "loss", round(loss.item(), 4))
print("first FPEM down_add3 weight changed:", not torch.equal(w0, model.neck.fpems[0].down_add3.pointwise_conv.weight))
