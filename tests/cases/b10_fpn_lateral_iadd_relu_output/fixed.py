"""The fixed twin: the top-down addition is out of place (lyongo/NWPU-MOC#4)."""
import torch
import torch.nn.functional as F
from torch import nn


class ConvModule(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.activate = nn.ReLU(inplace=False)

    def forward(self, x):
        return self.activate(self.conv(x))


class FPN_Head(nn.Module):
    def __init__(self, in_channels=(8, 16, 32), channels=8, num_classes=4):
        super().__init__()
        self.lateral_convs = nn.ModuleList(ConvModule(c, channels, 1) for c in in_channels)
        self.fpn_convs = nn.ModuleList(ConvModule(channels, channels, 3) for _ in in_channels)
        self.cls_seg = nn.Conv2d(channels, num_classes, 1)

    def forward(self, inputs):
        laterals = [lateral_conv(x) for lateral_conv, x in zip(self.lateral_convs, inputs)]
        for i in range(len(laterals) - 1, 0, -1):
            prev_shape = laterals[i - 1].shape[2:]
            laterals[i - 1] = laterals[i - 1] + F.interpolate(laterals[i], size=prev_shape, mode='nearest')
        outs = [fpn_conv(lateral) for fpn_conv, lateral in zip(self.fpn_convs, laterals)]
        return self.cls_seg(outs[0])


torch.manual_seed(0)
head = FPN_Head()
optimizer = torch.optim.SGD(head.parameters(), lr=0.05)
feats = [torch.randn(2, 8, 32, 32), torch.randn(2, 16, 16, 16), torch.randn(2, 32, 8, 8)]
density_classes = torch.randint(0, 4, (2, 32, 32))
for it in range(3):
    loss = F.cross_entropy(head(feats), density_classes)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"iter {it}: loss {loss.item():.4f}")
