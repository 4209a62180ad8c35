# [Fix] Remove the inplace operation in uper_head and fpn_neck
# https://github.com/open-mmlab/mmsegmentation/pull/1103
#
# What went wrong: ViT + MultiLevelNeck (MLN) + UPerHead training crashed in
# loss.backward() with "RuntimeError: one of the variables needed for gradient
# computation has been modified by an inplace operation". UPerHead.forward built the
# top-down path with `laterals[i - 1] += resize(laterals[i], ...)`; laterals[i - 1]
# is the output of a ConvModule (conv -> BN -> ReLU) and ReLU saves its output for
# backward, so the in-place add bumps its version and backward refuses.
# Fix (merged PR #1103): `laterals[i - 1] = laterals[i - 1] + resize(laterals[i], ...)`
# (same change in the FPN neck).
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def resize(input, size=None, scale_factor=None, mode='nearest', align_corners=None):
    return F.interpolate(input, size, scale_factor, mode, align_corners)


class ConvModule(nn.Module):
    """mmcv.cnn.ConvModule with order ('conv', 'norm', 'act')."""

    def __init__(self, in_channels, out_channels, kernel_size, padding=0, norm_cfg=None,
                 act_cfg=dict(type='ReLU'), inplace=True):
        super().__init__()
        self.with_norm = norm_cfg is not None
        self.with_activation = act_cfg is not None
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=padding, bias=not self.with_norm)
        if self.with_norm:
            self.bn = nn.BatchNorm2d(out_channels)
        if self.with_activation:
            self.activate = nn.ReLU(inplace=inplace)

    def forward(self, x):
        x = self.conv(x)
        if self.with_norm:
            x = self.bn(x)
        if self.with_activation:
            x = self.activate(x)
        return x


class VisionTransformer(nn.Module):
    """Tiny mmseg VisionTransformer: patch embed + encoder layers, out_indices -> NCHW maps."""

    def __init__(self, embed_dims=32, num_layers=4, num_heads=2, patch_size=4, out_indices=(0, 1, 2, 3)):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, embed_dims, patch_size, patch_size)
        self.layers = nn.ModuleList([
            nn.TransformerEncoderLayer(embed_dims, num_heads, embed_dims * 2, dropout=0.0, batch_first=True)
            for _ in range(num_layers)])
        self.out_indices = out_indices

    def forward(self, inputs):
        x = self.patch_embed(inputs)
        B, C, H, W = x.shape
        x = x.flatten(2).transpose(1, 2)
        outs = []
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i in self.out_indices:
                outs.append(x.transpose(1, 2).reshape(B, C, H, W).contiguous())
        return tuple(outs)


class MultiLevelNeck(nn.Module):
    """mmseg.models.necks.MultiLevelNeck (MLN)."""

    def __init__(self, in_channels, out_channels, scales=[4, 2, 1, 0.5]):
        super().__init__()
        self.scales = scales
        self.num_outs = len(scales)
        self.lateral_convs = nn.ModuleList([ConvModule(c, out_channels, 1, act_cfg=None) for c in in_channels])
        self.convs = nn.ModuleList([ConvModule(out_channels, out_channels, 3, padding=1, act_cfg=None)
                                    for _ in range(self.num_outs)])

    def forward(self, inputs):
        inputs = [lateral_conv(inputs[i]) for i, lateral_conv in enumerate(self.lateral_convs)]
        outs = []
        for i in range(self.num_outs):
            x_resize = resize(inputs[i], scale_factor=self.scales[i], mode='bilinear')
            outs.append(self.convs[i](x_resize))
        return tuple(outs)


class PPM(nn.ModuleList):
    """Pooling Pyramid Module used in PSPNet / UPerHead."""

    def __init__(self, pool_scales, in_channels, channels, norm_cfg, align_corners):
        super().__init__()
        self.align_corners = align_corners
        for pool_scale in pool_scales:
            self.append(nn.Sequential(nn.AdaptiveAvgPool2d(pool_scale),
                                      ConvModule(in_channels, channels, 1, norm_cfg=norm_cfg)))

    def forward(self, x):
        ppm_outs = []
        for ppm in self:
            ppm_out = ppm(x)
            ppm_outs.append(resize(ppm_out, size=x.size()[2:], mode='bilinear', align_corners=self.align_corners))
        return ppm_outs


class UPerHead(nn.Module):
    """mmseg.models.decode_heads.UPerHead."""

    def __init__(self, in_channels, channels, num_classes, pool_scales=(1, 2, 3, 6), align_corners=False):
        super().__init__()
        norm_cfg = dict(type='BN', requires_grad=True)
        self.align_corners = align_corners
        self.psp_modules = PPM(pool_scales, in_channels[-1], channels, norm_cfg, align_corners)
        self.bottleneck = ConvModule(in_channels[-1] + len(pool_scales) * channels, channels, 3, padding=1,
                                     norm_cfg=norm_cfg)
        self.lateral_convs = nn.ModuleList()
        self.fpn_convs = nn.ModuleList()
        for in_ch in in_channels[:-1]:  # skip the top layer
            self.lateral_convs.append(ConvModule(in_ch, channels, 1, norm_cfg=norm_cfg, inplace=False))
            self.fpn_convs.append(ConvModule(channels, channels, 3, padding=1, norm_cfg=norm_cfg, inplace=False))
        self.fpn_bottleneck = ConvModule(len(in_channels) * channels, channels, 3, padding=1, norm_cfg=norm_cfg)
        self.conv_seg = nn.Conv2d(channels, num_classes, kernel_size=1)

    def psp_forward(self, inputs):
        x = inputs[-1]
        psp_outs = [x]
        psp_outs.extend(self.psp_modules(x))
        psp_outs = torch.cat(psp_outs, dim=1)
        return self.bottleneck(psp_outs)

    def forward(self, inputs):
        # build laterals
        laterals = [lateral_conv(inputs[i]) for i, lateral_conv in enumerate(self.lateral_convs)]
        laterals.append(self.psp_forward(inputs))

        # build top-down path
        used_backbone_levels = len(laterals)
        for i in range(used_backbone_levels - 1, 0, -1):
            prev_shape = laterals[i - 1].shape[2:]
            laterals[i - 1] = laterals[i - 1] + resize(laterals[i], size=prev_shape, mode='bilinear', align_corners=self.align_corners)

        # build outputs
        fpn_outs = [self.fpn_convs[i](laterals[i]) for i in range(used_backbone_levels - 1)]
        fpn_outs.append(laterals[-1])  # append psp feature
        for i in range(used_backbone_levels - 1, 0, -1):
            fpn_outs[i] = resize(fpn_outs[i], size=fpn_outs[0].shape[2:], mode='bilinear',
                                 align_corners=self.align_corners)
        fpn_outs = torch.cat(fpn_outs, dim=1)
        output = self.fpn_bottleneck(fpn_outs)
        return self.conv_seg(output)


class EncoderDecoder(nn.Module):

    def __init__(self, num_classes=5):
        super().__init__()
        self.backbone = VisionTransformer(embed_dims=32)
        self.neck = MultiLevelNeck(in_channels=[32, 32, 32, 32], out_channels=32)
        self.decode_head = UPerHead(in_channels=[32, 32, 32, 32], channels=16, num_classes=num_classes)

    def forward_train(self, img, gt_semantic_seg):
        x = self.neck(self.backbone(img))
        seg_logits = self.decode_head(x)
        seg_logits = resize(seg_logits, size=gt_semantic_seg.shape[1:], mode='bilinear', align_corners=False)
        return dict(loss_seg=F.cross_entropy(seg_logits, gt_semantic_seg, ignore_index=255))


model = EncoderDecoder()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
img = torch.randn(2, 3, 32, 32)
gt_semantic_seg = torch.randint(0, 5, (2, 32, 32))

for it in range(3):
    losses = model.forward_train(img, gt_semantic_seg)
    loss = sum(losses.values())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f'iter {it} loss {loss.item():.4f}')
print('decode_head.lateral_convs[0].conv.weight.grad norm:',
      model.decode_head.lateral_convs[0].conv.weight.grad.norm().item())
