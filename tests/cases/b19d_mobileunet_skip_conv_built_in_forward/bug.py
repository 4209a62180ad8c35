"""Mobile-UNet (lafith/Mobile-UNet#1, https://github.com/lafith/Mobile-UNet/issues/1): "A dangling layer in
forward call?". model.py's InvertedResidualBlock.forward builds `nn.Conv2d(self.in_c, self.out_c, 1, 1, 0)` for
the skip connection whenever stride is 1 and in_c != out_c (irb_bottleneck1: 32 -> 16).
Symptom: a new 1x1 conv with fresh random weights is made on every call; it is never in model.parameters(), so
the optimizer never trains it (and the same input gives a different output on each call).
Why: the layer is created inside forward instead of being registered once in __init__.
Fix (the maintainer: "I have fixed it in the latest commit"): build the 1x1 skip conv once in __init__
(self.conv1x1) and call it in forward."""
import torch
import torch.nn as nn


class InvertedResidualBlock(nn.Module):
    """inverted residual block used in MobileNetV2"""
    def __init__(self, in_c, out_c, stride, expansion_factor=6):
        super(InvertedResidualBlock, self).__init__()
        assert stride in [1, 2]
        self.stride = stride
        self.in_c = in_c
        self.out_c = out_c
        # Skip connection if stride is 1
        self.use_skip_connection = True if self.stride == 1 else False
        ex_c = int(self.in_c * expansion_factor)
        self.conv = nn.Sequential(
            nn.Conv2d(self.in_c, ex_c, 1, 1, 0, bias=False),
            nn.BatchNorm2d(ex_c),
            nn.ReLU6(inplace=True),
            nn.Conv2d(ex_c, ex_c, 3, self.stride, 1, groups=ex_c, bias=False),
            nn.BatchNorm2d(ex_c),
            nn.ReLU6(inplace=True),
            nn.Conv2d(ex_c, self.out_c, 1, 1, 0, bias=False),
            nn.BatchNorm2d(self.out_c),
        )

    def forward(self, x):
        if self.use_skip_connection:
            out = self.conv(x)
            if self.in_c != self.out_c:
                x = nn.Conv2d(self.in_c, self.out_c, 1, 1, 0, bias=False)(x)  # <- module_in_forward
            return x + out
        else:
            return self.conv(x)


class MobileUNet(nn.Module):
    """Mobile-UNet in short: stem, one stride-1 bottleneck 32 -> 16 (the dangling skip conv), a decoder."""
    def __init__(self):
        super(MobileUNet, self).__init__()
        self.conv3x3 = nn.Sequential(nn.Conv2d(3, 3, 3, padding=1, groups=3, stride=2), nn.BatchNorm2d(3),
                                     nn.ReLU6(inplace=True), nn.Conv2d(3, 32, kernel_size=1))
        self.irb_bottleneck1 = nn.Sequential(InvertedResidualBlock(32, 16, 1, 1))
        self.DConv4x4 = nn.ConvTranspose2d(16, 16, 4, 2, 1, groups=16, bias=False)
        self.conv1x1_decode = nn.Conv2d(16, 3, kernel_size=1, stride=1)

    def forward(self, x):
        x1 = self.conv3x3(x)
        x2 = self.irb_bottleneck1(x1)
        d5 = self.DConv4x4(x2)
        return self.conv1x1_decode(d5)


torch.manual_seed(0)
model = MobileUNet()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.MSELoss()
images, masks = torch.rand(2, 3, 16, 16), torch.rand(2, 3, 16, 16)
for step in range(3):
    optimizer.zero_grad()
    loss = criterion(model(images), masks)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
n_params = sum(p.numel() for p in model.parameters())
print("trainable parameters:", n_params, "(the 32->16 skip conv would add", 32 * 16, ")")
model.eval()
with torch.no_grad():
    print("same input, same output:", torch.allclose(model(images), model(images)))
