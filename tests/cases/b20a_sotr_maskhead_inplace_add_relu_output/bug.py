"""SOTR (easton-cau/SOTR#19, https://github.com/easton-cau/SOTR/issues/19): training stops in loss.backward()
with "RuntimeError: one of the variables needed for gradient computation has been modified by an inplace
operation" (torch >= 1.10).
Why: MaskHead.forward (adet/modeling/sotr/sotr.py) starts feature_add_all_level as the output of level 0's
conv tower, whose last layer is nn.ReLU; ReLU saves its output for backward. The loop then accumulates the other
levels with `feature_add_all_level += ...`, writing into that saved output in place.
Fix (the thread's answer): accumulate out of place, feature_add_all_level = feature_add_all_level + ....
The detectron2 cfg / ShapeSpec inputs of SOTR are replaced by plain arguments."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MaskHead(nn.Module):
    def __init__(self, num_levels=4, mask_in_channels=8, mask_channels=32, num_masks=32, norm="GN"):
        """SOTR Mask Head."""
        super().__init__()
        self.num_masks = num_masks
        self.mask_in_channels = mask_in_channels
        self.mask_channels = mask_channels
        self.num_levels = num_levels

        self.convs_all_levels = nn.ModuleList()
        for i in range(self.num_levels):
            convs_per_level = nn.Sequential()
            if i == 0:
                conv_tower = list()
                conv_tower.append(nn.Conv2d(self.mask_in_channels, self.mask_channels, kernel_size=3, stride=1,
                                            padding=1, bias=norm is None))
                if norm == "GN":
                    conv_tower.append(nn.GroupNorm(32, self.mask_channels))
                conv_tower.append(nn.ReLU(inplace=False))
                convs_per_level.add_module('conv' + str(i), nn.Sequential(*conv_tower))
                self.convs_all_levels.append(convs_per_level)
                continue

            for j in range(i):
                chn = self.mask_in_channels if j == 0 else self.mask_channels
                conv_tower = list()
                conv_tower.append(nn.Conv2d(chn, self.mask_channels, kernel_size=3, stride=1,
                                            padding=1, bias=norm is None))
                if norm == "GN":
                    conv_tower.append(nn.GroupNorm(32, self.mask_channels))
                conv_tower.append(nn.ReLU(inplace=False))
                convs_per_level.add_module('conv' + str(j), nn.Sequential(*conv_tower))
                upsample_tower = nn.Upsample(scale_factor=2, mode='bilinear', align_corners=False)
                convs_per_level.add_module('upsample' + str(j), upsample_tower)

            self.convs_all_levels.append(convs_per_level)

        self.conv_pred = nn.Sequential(
            nn.Conv2d(self.mask_channels, self.num_masks, kernel_size=1, stride=1, padding=0, bias=norm is None),
            nn.GroupNorm(32, self.num_masks),
            nn.ReLU(inplace=True)
        )

    def forward(self, features):
        assert len(features) == self.num_levels, \
            print("The number of input features should be equal to the supposed level.")

        feature_add_all_level = self.convs_all_levels[0](features[0])
        for i in range(1, self.num_levels):
            mask_feat = features[i]
            feature_add_all_level += self.convs_all_levels[i](mask_feat)  # <- inplace_saved

        mask_pred = self.conv_pred(feature_add_all_level)
        return mask_pred


torch.manual_seed(0)
head = MaskHead()
optimizer = torch.optim.SGD(head.parameters(), lr=0.1)
features = [torch.randn(2, 8, 16 // 2 ** i, 16 // 2 ** i) for i in range(4)]  # P2..P5 of the FPN
target = torch.rand(2, 32, 16, 16)
before = head.convs_all_levels[0][0][0].weight.detach().clone()
for step in range(3):
    optimizer.zero_grad()
    mask_pred = head(features)
    loss = F.mse_loss(mask_pred, target)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
print("weights changed:", not torch.equal(before, head.convs_all_levels[0][0][0].weight))
