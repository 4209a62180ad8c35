# NanoDet-Plus with the neck switched from GhostPAN to FPN (activation: LeakyReLU),
# three ShuffleNetV2 stages in, one shared detection head on the FPN outputs.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def act_layers(name):
    if name == "LeakyReLU":
        return nn.LeakyReLU(negative_slope=0.1, inplace=True)
    return nn.ReLU(inplace=True)


class ConvModule(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, padding=0, activation="ReLU", inplace=False):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=padding)
        self.act = act_layers(activation) if activation else None

    def forward(self, x):
        x = self.conv(x)
        if self.act is not None:
            x = self.act(x)
        return x


class FPN(nn.Module):
    def __init__(self, in_channels, out_channels, num_outs, activation=None):
        super().__init__()
        self.in_channels = in_channels
        self.num_outs = num_outs
        self.lateral_convs = nn.ModuleList()
        for c in in_channels:
            self.lateral_convs.append(ConvModule(c, out_channels, 1, activation=activation, inplace=False))

    def forward(self, inputs):
        assert len(inputs) == len(self.in_channels)
        # build laterals
        laterals = [lateral_conv(inputs[i]) for i, lateral_conv in enumerate(self.lateral_convs)]
        # build top-down path
        used_backbone_levels = len(laterals)
        for i in range(used_backbone_levels - 1, 0, -1):
            laterals[i - 1] = laterals[i - 1] + F.interpolate(laterals[i], scale_factor=2, mode="bilinear")
        outs = [laterals[i] for i in range(used_backbone_levels)]
        return tuple(outs)


class SimpleHead(nn.Module):
    def __init__(self, in_channels, num_classes, reg_max=7):
        super().__init__()
        self.gfl_cls = nn.Conv2d(in_channels, num_classes + 4 * (reg_max + 1), 3, padding=1)
        self.num_classes = num_classes

    def forward(self, feats):
        return [self.gfl_cls(f) for f in feats]


class Detector(nn.Module):
    def __init__(self):
        super().__init__()
        self.fpn = FPN(in_channels=[16, 32, 64], out_channels=24, num_outs=3, activation="LeakyReLU")
        self.head = SimpleHead(24, num_classes=4)

    def forward(self, feats):
        return self.head(self.fpn(feats))


model = Detector()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

# backbone stage outputs (strides 8, 16, 32) for a 160x160 image
feats = [torch.randn(2, 16, 20, 20), torch.randn(2, 32, 10, 10), torch.randn(2, 64, 5, 5)]

for step in range(3):
    preds = model(feats)
    loss_qfl = sum(F.binary_cross_entropy_with_logits(p[:, :4], torch.zeros_like(p[:, :4])) for p in preds)
    loss_dfl = sum(p[:, 4:].pow(2).mean() for p in preds)
    loss = loss_qfl + 0.25 * loss_dfl
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss={loss.item():.4f}")
print("fpn.lateral_convs[0].conv.weight.grad is None:", model.fpn.lateral_convs[0].conv.weight.grad is None)
