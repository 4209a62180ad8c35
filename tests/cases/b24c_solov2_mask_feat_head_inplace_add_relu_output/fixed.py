"""OpenFirework/pytorch_solov2 issue #22 "请问大家有遇到 inplace operation 错误呀",
https://github.com/OpenFirework/pytorch_solov2/issues/22: training SOLOv2 stops at the first backward with
"RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation:
[torch.FloatTensor [1, 128, 192, 120]], which is output 0 of ReluBackward0, is at version 3; expected version 0".
In MaskFeatHead.forward the running sum starts as the output of level 0's Conv-GN-ReLU block, and the other three
levels are added onto it with `feature_add_all_level += ...`; ReLU saves its output for backward, so the three
in-place adds (version 3) invalidate it. The reporter (answering his own thread, in Chinese) fixed it by writing
the sum out of place: `feature_add_all_level = self.convs_all_levels[i](input_p) + feature_add_all_level`.
The line to change is in the repository's modules/mask_feat_head.py (the user's own model code).
Channels and feature sizes are shrunk; the backbone/FPN and the SOLO head are replaced by random FPN features and a
plain loss on the mask features."""
import torch
import torch.nn as nn


class MaskFeatHead(nn.Module):
    def __init__(self, in_channels, out_channels, start_level, end_level, num_classes):
        super(MaskFeatHead, self).__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.start_level = start_level
        self.end_level = end_level
        self.num_classes = num_classes

        self.convs_all_levels = nn.ModuleList()
        for i in range(self.start_level, self.end_level + 1):
            convs_per_level = nn.Sequential()
            if i == 0:
                one_conv = nn.Sequential(
                    nn.Conv2d(self.in_channels, self.out_channels, 3, padding=1, bias=False),
                    nn.GroupNorm(num_channels=self.out_channels, num_groups=32),
                    nn.ReLU(inplace=False))
                convs_per_level.add_module('conv' + str(i), one_conv)
                self.convs_all_levels.append(convs_per_level)
                continue

            for j in range(i):
                if j == 0:
                    chn = self.in_channels + 2 if i == 3 else self.in_channels
                    one_conv = nn.Sequential(
                        nn.Conv2d(chn, self.out_channels, 3, padding=1, bias=False),
                        nn.GroupNorm(num_channels=self.out_channels, num_groups=32),
                        nn.ReLU(inplace=False))
                    convs_per_level.add_module('conv' + str(j), one_conv)
                    one_upsample = nn.Upsample(scale_factor=2, mode='bilinear', align_corners=False)
                    convs_per_level.add_module('upsample' + str(j), one_upsample)
                    continue

                one_conv = nn.Sequential(
                    nn.Conv2d(self.out_channels, self.out_channels, 3, padding=1, bias=False),
                    nn.GroupNorm(num_channels=self.out_channels, num_groups=32),
                    nn.ReLU(inplace=False))
                convs_per_level.add_module('conv' + str(j), one_conv)
                one_upsample = nn.Upsample(scale_factor=2, mode='bilinear', align_corners=False)
                convs_per_level.add_module('upsample' + str(j), one_upsample)

            self.convs_all_levels.append(convs_per_level)

        self.conv_pred = nn.Sequential(
            nn.Conv2d(self.out_channels, self.num_classes, 1, padding=0, bias=False),
            nn.GroupNorm(num_channels=self.out_channels, num_groups=32),
            nn.ReLU(inplace=True))

    def forward(self, inputs):
        assert len(inputs) == (self.end_level - self.start_level + 1)

        feature_add_all_level = self.convs_all_levels[0](inputs[0])
        for i in range(1, len(inputs)):
            input_p = inputs[i]
            if i == 3:
                input_feat = input_p
                x_range = torch.linspace(-1, 1, input_feat.shape[-1], device=input_feat.device)
                y_range = torch.linspace(-1, 1, input_feat.shape[-2], device=input_feat.device)
                y, x = torch.meshgrid(y_range, x_range, indexing='ij')
                y = y.expand([input_feat.shape[0], 1, -1, -1])
                x = x.expand([input_feat.shape[0], 1, -1, -1])
                coord_feat = torch.cat([x, y], 1)
                input_p = torch.cat([input_p, coord_feat], 1)

            feature_add_all_level = self.convs_all_levels[i](input_p) + feature_add_all_level

        feature_pred = self.conv_pred(feature_add_all_level)
        return feature_pred


torch.manual_seed(0)
torch.set_num_threads(1)
mask_feat_head = MaskFeatHead(in_channels=32, out_channels=32, start_level=0, end_level=3, num_classes=32)
optimizer = torch.optim.SGD(mask_feat_head.parameters(), lr=0.01, momentum=0.9)
first_weight = mask_feat_head.convs_all_levels[0][0][0].weight.detach().clone()

for step in range(3):
    # P2..P5 of the FPN, each half the size of the one before
    fpn_feats = [torch.randn(1, 32, 16 // 2 ** k, 24 // 2 ** k) for k in range(4)]
    target = torch.rand(1, 32, 16, 24)
    mask_feat_pred = mask_feat_head(fpn_feats)
    loss = ((mask_feat_pred - target) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print("step", step, "loss", round(loss.item(), 4))

print("level-0 conv changed:", not torch.equal(first_weight, mask_feat_head.convs_all_levels[0][0][0].weight))
