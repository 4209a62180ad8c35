"""SAUNet (sunjesse/shape-attentive-unet#3, https://github.com/sunjesse/shape-attentive-unet/issues/3): DualAttBlock
computes the channel-attention output `out = C(X) * (1 + S(X))` but forward returns `fused, spatial`, so `out` is
an unused variable: the SE channel-attention module (channelAttn) and the spatial-attention block never reach the
segmentation loss and never get a gradient. The maintainer confirmed it was a mistake in the GitHub version; the fix
is `return out, spatial`."""
import torch
import torch.nn.functional as F
from torch import nn


class SEModule(nn.Module):
    def __init__(self, channels, reduction):
        super().__init__()
        self.avg_pool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(channels, channels // reduction, kernel_size=1)
        self.relu = nn.ReLU(inplace=True)
        self.fc2 = nn.Conv2d(channels // reduction, channels, kernel_size=1)
        self.sigmoid = nn.Sigmoid()

    def forward(self, x):
        module_input = x
        x = self.sigmoid(self.fc2(self.relu(self.fc1(self.avg_pool(x)))))
        return module_input * x


class SpatialAttentionBlock(nn.Module):
    def __init__(self, in_features, attn_features):
        super().__init__()
        self.down = nn.Conv2d(in_features, attn_features, kernel_size=1, bias=False)
        self.phi = nn.Conv2d(attn_features, 1, kernel_size=1)
        self.bn = nn.BatchNorm2d(attn_features)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        c = self.phi(self.relu(self.bn(self.down(x))))
        return torch.sigmoid(c)


class DualAttBlock(nn.Module):
    def __init__(self, inchannels=(8, 16), outchannels=16):
        super().__init__()
        self.up = nn.Sequential(nn.ConvTranspose2d(inchannels[0], inchannels[0], 4, stride=2, padding=1),
                                nn.BatchNorm2d(inchannels[0]), nn.ReLU(inplace=True))
        self.spatialAttn = SpatialAttentionBlock(outchannels, outchannels // 4)
        self.channelAttn = SEModule(outchannels, 4)
        self.c3x3rb = nn.Sequential(nn.Conv2d(sum(inchannels), outchannels, 3, padding=1),
                                    nn.BatchNorm2d(outchannels), nn.ReLU(inplace=True))

    def forward(self, x):  # x: (low-resolution decoder features, skip features)
        fused = torch.cat([x[1], self.up(x[0])], dim=1)
        fused = self.c3x3rb(fused)
        spatial = self.spatialAttn(fused)
        channel = self.channelAttn(fused)
        out = torch.mul(spatial.expand_as(channel) + 1, channel)  # F(X) = C(X)*(1+S(X))
        return fused, spatial  # <- unused_parameter


class TinySAUNetDecoder(nn.Module):
    def __init__(self, n_classes=4):
        super().__init__()
        self.enc1 = nn.Conv2d(1, 16, 3, padding=1)
        self.enc2 = nn.Conv2d(16, 8, 3, stride=2, padding=1)
        self.dec = DualAttBlock((8, 16), 16)
        self.head = nn.Conv2d(16, n_classes, 1)

    def forward(self, img):
        s = F.relu(self.enc1(img))
        d = F.relu(self.enc2(s))
        feat, attn_map = self.dec((d, s))
        return self.head(feat), attn_map


torch.manual_seed(0)
model = TinySAUNetDecoder()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
img = torch.randn(2, 1, 16, 16)
mask = torch.randint(0, 4, (2, 16, 16))
for it in range(3):
    optimizer.zero_grad()
    logits, _ = model(img)
    loss = F.cross_entropy(logits, mask)
    loss.backward()
    optimizer.step()
    print(f"iter {it}: loss {loss.item():.4f}")
print("channelAttn.fc1.weight.grad is None:", model.dec.channelAttn.fc1.weight.grad is None)
print("spatialAttn.down.weight.grad is None:", model.dec.spatialAttn.down.weight.grad is None)
