# SegLossOdyssey's HausdorffERLoss (JunMa11/SegLossOdyssey#21, copied from PatRyg99/HausdorffLoss) used
# as the loss of a small 2D U-Net: forward hands the prediction to perform_erosion as a NumPy array,
# erodes it with a convolution in NumPy and wraps the result back with torch.from_numpy, so the loss
# never reaches the network's output.
import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

torch.manual_seed(0)


def convolve(a, kernel):
    """Stand-in for scipy.ndimage.convolve(a, kernel, mode="constant", cval=0.0) (symmetric kernel)."""
    out = np.zeros_like(a)
    padded = np.pad(a, [(0, 0), (1, 1), (1, 1)])
    for i in range(3):
        for j in range(3):
            out += kernel[0, i, j] * padded[:, i:i + a.shape[1], j:j + a.shape[2]]
    return out


class HausdorffERLoss(nn.Module):
    """Binary Hausdorff loss based on morphological erosion"""

    def __init__(self, alpha=2.0, erosions=10):
        super().__init__()
        self.alpha = alpha
        self.erosions = erosions
        cross = np.array([[[0, 1, 0], [1, 1, 1], [0, 1, 0]]], dtype=np.float32)  # cv.MORPH_CROSS (3, 3)
        self.kernel2D = cross * 0.2

    @torch.no_grad()
    def perform_erosion(self, pred, target):
        bound = (pred - target) ** 2
        eroted = np.zeros_like(bound)
        for batch in range(len(bound)):
            for k in range(self.erosions):
                dilation = convolve(bound[batch], self.kernel2D)
                erosion = dilation - 0.5
                erosion[erosion < 0] = 0
                if np.ptp(erosion) != 0:
                    erosion = (erosion - erosion.min()) / np.ptp(erosion)
                bound[batch] = erosion
                eroted[batch] += erosion * (k + 1) ** self.alpha
        return eroted

    def forward(self, pred, target):
        assert pred.dim() == 4 and pred.dim() == target.dim()
        eroted = torch.from_numpy(self.perform_erosion(pred.cpu().numpy(), target.cpu().numpy())).float()  # <- numpy
        loss = eroted.mean()
        return loss


class TinyUNet(nn.Module):
    def __init__(self, ch=8):
        super().__init__()
        self.enc1 = nn.Sequential(nn.Conv2d(1, ch, 3, padding=1), nn.ReLU())
        self.enc2 = nn.Sequential(nn.Conv2d(ch, 2 * ch, 3, padding=1), nn.ReLU())
        self.up = nn.ConvTranspose2d(2 * ch, ch, 2, stride=2)
        self.dec = nn.Sequential(nn.Conv2d(2 * ch, ch, 3, padding=1), nn.ReLU())
        self.head = nn.Conv2d(ch, 1, 1)
        nn.init.constant_(self.head.bias, -4.0)  # background prior: sparse foreground

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        d = self.dec(torch.cat([self.up(e2), e1], dim=1))
        return self.head(d)


model = TinyUNet()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = HausdorffERLoss()

image = torch.randn(2, 1, 16, 16)
mask = torch.zeros(2, 1, 16, 16)
mask[:, :, 4:12, 5:11] = 1.0

for step in range(3):
    optimizer.zero_grad()
    pred = torch.sigmoid(model(image))
    loss = criterion(pred, mask)
    loss.backward()
    optimizer.step()
    print(f"step {step}: hausdorff-er loss {loss.item():.4f}, head grad {model.head.weight.grad.norm().item():.3e}")
