# "Runtime error gradient computation when train.py" (open-mmlab/mmflow #248),
# fixed by "[Fix] Fix in-place operator in RAFT" https://github.com/open-mmlab/mmflow/pull/252
# Fine-tuning RAFT with tools/train.py raised "one of the variables needed for gradient
# computation has been modified by an inplace operation ... ReluBackward0" in loss.backward().
# In BasicBlock._inner_forward (mmflow/models/utils/res_layer.py) the residual was added with
# `out += identity`, which writes into the output of the ReLU that ReLU's backward saved.
# Fix (PR #252): `out = out + identity`.
# mmcv's build_conv_layer/build_norm_layer/build_activation_layer are replaced by plain torch.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class BasicBlock(nn.Module):
    """Basic block for ResNet."""

    expansion = 1

    def __init__(self, inplanes, planes, stride=1, dilation=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride=stride, padding=1, dilation=dilation, bias=True)
        self.norm1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=True)
        self.norm2 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU()
        self.downsample = downsample

    def forward(self, x):
        def _inner_forward(x):
            identity = x

            out = self.conv1(x)
            out = self.norm1(out)
            out = self.relu(out)

            out = self.conv2(out)
            out = self.norm2(out)
            out = self.relu(out)

            if self.downsample is not None:
                identity = self.downsample(x)

            out = out + identity

            return out

        out = _inner_forward(x)
        out = self.relu(out)
        return out


class ResLayer(nn.Sequential):
    def __init__(self, block, inplanes, planes, num_blocks, stride=1):
        downsample = None
        if stride != 1 or inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2d(inplanes, planes * block.expansion, 1, stride=stride, bias=True),
                nn.BatchNorm2d(planes * block.expansion))
        layers = [block(inplanes, planes, stride=stride, downsample=downsample)]
        for _ in range(1, num_blocks):
            layers.append(block(planes * block.expansion, planes))
        super().__init__(*layers)


class RAFTEncoder(nn.Module):
    def __init__(self, in_channels=3, out_channels=16, base=8):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, base, 7, stride=2, padding=3)
        self.norm1 = nn.BatchNorm2d(base)
        self.relu = nn.ReLU()
        self.layer1 = ResLayer(BasicBlock, base, base, 2, stride=1)
        self.layer2 = ResLayer(BasicBlock, base, 2 * base, 2, stride=2)
        self.conv2 = nn.Conv2d(2 * base, out_channels, 1)

    def forward(self, x):
        x = self.relu(self.norm1(self.conv1(x)))
        x = self.layer1(x)
        x = self.layer2(x)
        return self.conv2(x)


class RAFT(nn.Module):
    """Toy RAFT: encoder on both frames, a flow head on the concatenated features."""

    def __init__(self):
        super().__init__()
        self.encoder = RAFTEncoder()
        self.flow_head = nn.Conv2d(32, 2, 3, padding=1)

    def forward(self, img1, img2):
        feat1 = self.encoder(img1)
        feat2 = self.encoder(img2)
        flow = self.flow_head(torch.cat([feat1, feat2], dim=1))
        return F.interpolate(flow, scale_factor=4, mode='bilinear', align_corners=False) * 4


model = RAFT()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
img1 = torch.randn(2, 3, 32, 32)
img2 = torch.randn(2, 3, 32, 32)
flow_gt = torch.randn(2, 2, 32, 32)

model.train()
flow_pred = model(img1, img2)
loss = (flow_pred - flow_gt).norm(dim=1).mean()  # EPE
optimizer.zero_grad()
loss.backward()
optimizer.step()
print('loss', loss.item())
print('encoder.conv1.weight.grad norm', model.encoder.conv1.weight.grad.norm().item())
