# Report: "Deepedit/DynUNetV1 not supporting MULTI GPU training"
#   https://github.com/Project-MONAI/MONAILabel/issues/492
#   tracked in MONAI as "Further enhance DynUNet via removing unused parts"
#   https://github.com/Project-MONAI/MONAI/issues/3293 (fixed by MONAI PR #3427)
# What went wrong: DynUNet built one deep-supervision head per decoder level
#   (len(upsamples) - 1 heads) and ran all of them in forward, but only the first
#   `deep_supr_num` head outputs are returned and reach the loss. The remaining heads'
#   parameters never receive a gradient; under DDP this crashed with "your module has
#   parameters that were not used in producing loss ... Parameter indices which did not
#   receive grad".
# Fix: only build `deep_supr_num` supervision heads (and none for the deeper levels).
# Plain-torch reduction of monai.networks.nets.DynUNet (v0.7) and its blocks.
from typing import List

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class UnetBasicBlock(nn.Module):
    def __init__(self, spatial_dims, in_channels, out_channels, kernel_size, stride, norm_name):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding=kernel_size // 2)
        self.conv2 = nn.Conv2d(out_channels, out_channels, kernel_size, 1, padding=kernel_size // 2)
        self.norm1 = nn.InstanceNorm2d(out_channels, affine=True)
        self.norm2 = nn.InstanceNorm2d(out_channels, affine=True)
        self.lrelu = nn.LeakyReLU(0.01)

    def forward(self, inp):
        out = self.lrelu(self.norm1(self.conv1(inp)))
        return self.lrelu(self.norm2(self.conv2(out)))


class UnetUpBlock(nn.Module):
    def __init__(self, spatial_dims, in_channels, out_channels, kernel_size, stride, norm_name, upsample_kernel_size):
        super().__init__()
        self.transp_conv = nn.ConvTranspose2d(in_channels, out_channels, upsample_kernel_size, upsample_kernel_size)
        self.conv_block = UnetBasicBlock(spatial_dims, out_channels * 2, out_channels, kernel_size, 1, norm_name)

    def forward(self, inp, skip):
        out = self.transp_conv(inp)
        out = torch.cat((out, skip), dim=1)
        return self.conv_block(out)


class UnetOutBlock(nn.Module):
    def __init__(self, spatial_dims, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 1)

    def forward(self, inp):
        return self.conv(inp)


class DynUNetSkipLayer(nn.Module):
    heads: List[torch.Tensor]

    def __init__(self, index, heads, downsample, upsample, superhead, nextlayer):
        super().__init__()
        self.downsample = downsample
        self.upsample = upsample
        self.nextlayer = nextlayer
        self.superhead = superhead
        self.heads = heads
        self.index = index

    def forward(self, x):
        downout = self.downsample(x)
        nextout = self.nextlayer(downout)
        upout = self.upsample(nextout, downout)
        if self.superhead is not None:
            self.heads[self.index] = self.superhead(upout)
        return upout


class DynUNet(nn.Module):
    def __init__(self, spatial_dims, in_channels, out_channels, kernel_size, strides, upsample_kernel_size,
                 norm_name="instance", deep_supervision=True, deep_supr_num=1):
        super().__init__()
        self.spatial_dims = spatial_dims
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.strides = strides
        self.upsample_kernel_size = upsample_kernel_size
        self.norm_name = norm_name
        self.deep_supervision = deep_supervision
        self.deep_supr_num = deep_supr_num
        self.filters = [min(2 ** (5 + i), 320) for i in range(len(strides))]
        self.input_block = UnetBasicBlock(spatial_dims, in_channels, self.filters[0], kernel_size[0], strides[0], norm_name)
        self.downsamples = nn.ModuleList(
            [UnetBasicBlock(spatial_dims, i, o, k, s, norm_name)
             for i, o, k, s in zip(self.filters[:-2], self.filters[1:-1], kernel_size[1:-1], strides[1:-1])]
        )
        self.bottleneck = UnetBasicBlock(spatial_dims, self.filters[-2], self.filters[-1], kernel_size[-1], strides[-1], norm_name)
        self.upsamples = nn.ModuleList(
            [UnetUpBlock(spatial_dims, i, o, k, 1, norm_name, u)
             for i, o, k, u in zip(self.filters[1:][::-1], self.filters[:-1][::-1], kernel_size[1:][::-1],
                                   upsample_kernel_size[::-1])]
        )
        self.output_block = self.get_output_block(0)
        self.deep_supervision_heads = self.get_deep_supervision_heads()
        self.heads: List[torch.Tensor] = [torch.rand(1)] * (len(self.deep_supervision_heads) + 1)

        def create_skips(index, downsamples, upsamples, superheads, bottleneck):
            if len(downsamples) == 0:
                return bottleneck
            elif index == 0:  # don't associate a supervision head with self.input_block
                current_head, rest_heads = nn.Identity(), superheads
            elif len(superheads) > 0:
                current_head, rest_heads = superheads[0], superheads[1:]
            else:  # no supervision head left for this level
                current_head, rest_heads = None, superheads
            next_layer = create_skips(1 + index, downsamples[1:], upsamples[1:], rest_heads, bottleneck)
            return DynUNetSkipLayer(index, self.heads, downsamples[0], upsamples[0], current_head, next_layer)

        self.skip_layers = create_skips(
            0,
            [self.input_block] + list(self.downsamples),
            self.upsamples[::-1],
            self.deep_supervision_heads,
            self.bottleneck,
        )

    def get_output_block(self, idx: int):
        return UnetOutBlock(self.spatial_dims, self.filters[idx], self.out_channels)

    def get_deep_supervision_heads(self):
        return nn.ModuleList([self.get_output_block(i + 1) for i in range(len(self.upsamples) - 1)])  # <- unused_parameter

    def forward(self, x):
        out = self.skip_layers(x)
        out = self.output_block(out)
        if self.training and self.deep_supervision:
            out_all = [out]
            feature_maps = self.heads[1 : self.deep_supr_num + 1]
            for feature_map in feature_maps:
                out_all.append(F.interpolate(feature_map, out.shape[2:]))
            return torch.stack(out_all, dim=1)
        return out


def compute_loss(preds, label, loss_fn):
    # dynunet tutorial: weighted sum over the stacked deep supervision outputs
    if preds.dim() == label.dim() + 1:
        preds = torch.unbind(preds, dim=1)
        weights = [0.5 ** i for i in range(len(preds))]
        return sum(w * loss_fn(p, label) for w, p in zip(weights, preds)) / sum(weights)
    return loss_fn(preds, label)


net = DynUNet(
    spatial_dims=2,
    in_channels=1,
    out_channels=2,
    kernel_size=[3, 3, 3, 3],
    strides=[1, 2, 2, 2],
    upsample_kernel_size=[2, 2, 2],
    deep_supervision=True,
    deep_supr_num=1,
)
optimizer = torch.optim.SGD(net.parameters(), lr=1e-2, momentum=0.99, nesterov=True)
ce = nn.CrossEntropyLoss()


def loss_fn(pred, target):
    return ce(pred, target[:, 0])


image = torch.randn(2, 1, 16, 16)
label = torch.randint(0, 2, (2, 1, 16, 16))

net.train()
optimizer.zero_grad()
preds = net(image)
loss = compute_loss(preds, label, loss_fn)
loss.backward()
for i, head in enumerate(net.deep_supervision_heads):
    print(f"deep_supervision_heads[{i}].conv.weight.grad is None:", head.conv.weight.grad is None)
optimizer.step()
print("loss:", loss.item())
