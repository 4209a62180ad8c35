"""iMED-Lab/ER-Net (3D vessel segmentation), https://github.com/iMED-Lab/ER-Net/pull/3

What the user saw: training ER_Net with PyTorch 1.13 stopped at loss.backward() with
"RuntimeError: one of the variables needed for gradient computation has been modified by an inplace
operation: [torch.cuda.FloatTensor [4, 32, 64, 64, 64]], which is output 0 of ReluBackward0, is at
version 1; expected version 0 instead."
Why: in ResEncoder.forward, `out = self.relu(self.bn2(self.conv2(out)))` gives a tensor that ReLU saved
for its backward (ReLU's gradient is computed from its output); `out += residual` then writes into that
very tensor in place, so autograd finds the saved value changed.
Fix (the PR): write it out of place, `out = out + residual`.
"""
import torch
import torch.nn as nn

torch.manual_seed(0)


class ResEncoder(nn.Module):
    def __init__(self, in_channels, out_channels):
        super(ResEncoder, self).__init__()
        self.conv1 = nn.Conv3d(in_channels, out_channels, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm3d(out_channels)
        self.conv2 = nn.Conv3d(out_channels, out_channels, kernel_size=3, padding=1)
        self.bn2 = nn.BatchNorm3d(out_channels)
        self.relu = nn.ReLU(inplace=False)
        self.conv1x1 = nn.Conv3d(in_channels, out_channels, kernel_size=1)

    def forward(self, x):
        residual = self.conv1x1(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out += residual  # <- inplace_saved
        out = self.relu(out)
        return out


class ER_Net(nn.Module):
    def __init__(self, classes, channels):
        super(ER_Net, self).__init__()
        self.encoder1 = ResEncoder(channels, 4)
        self.final = nn.Conv3d(4, classes, kernel_size=1, padding=0)

    def forward(self, x):
        enc1 = self.encoder1(x)
        return torch.sigmoid(self.final(enc1))


model = ER_Net(classes=1, channels=1)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.BCELoss()
image = torch.randn(2, 1, 4, 4, 4)
label = (torch.rand(2, 1, 4, 4, 4) > 0.5).float()

for step in range(3):
    optimizer.zero_grad()
    pred = model(image)
    loss = criterion(pred, label)
    loss.backward()
    optimizer.step()
    print(step, loss.item())
