"""Fixed twin: AdaIR's Adaptive Frequency Learning Block (c-yn/AdaIR#3): FreModule.fft predicts a per-image
low/high-frequency cut-off with `rate_conv`, then turns it into a box mask with
`(h//n * threshold[i,0,:,:]).int()` and a slice write of 1s into a zeros tensor. The integer cast
cuts the graph, so `rate_conv` never gets a gradient and its weights stay at their init."""
import torch
from torch import nn
import torch.nn.functional as F

torch.manual_seed(0)


class FreModule(nn.Module):
    def __init__(self, dim, in_dim=3):
        super().__init__()
        self.conv1 = nn.Conv2d(in_dim, dim, kernel_size=3, stride=1, padding=1, bias=False)
        self.rate_conv = nn.Sequential(
            nn.Conv2d(dim, dim // 8, 1, bias=False),
            nn.GELU(),
            nn.Conv2d(dim // 8, 2, 1, bias=False),
        )
        self.proj = nn.Conv2d(2 * dim, dim, kernel_size=1)
        self.para1 = nn.Parameter(torch.zeros(dim, 1, 1))
        self.para2 = nn.Parameter(torch.ones(dim, 1, 1))

    def forward(self, x, y):
        _, _, H, W = y.size()
        x = F.interpolate(x, (H, W), mode='bilinear')
        high_feature, low_feature = self.fft(x)
        agg = self.proj(torch.cat([high_feature, low_feature], 1))
        return agg * self.para1 + y * self.para2

    def shift(self, x):
        b, c, h, w = x.shape
        return torch.roll(x, shifts=(int(h / 2), int(w / 2)), dims=(2, 3))

    def unshift(self, x):
        b, c, h, w = x.shape
        return torch.roll(x, shifts=(-int(h / 2), -int(w / 2)), dims=(2, 3))

    def fft(self, x, n=4):
        """obtain high/low-frequency features from input"""
        x = self.conv1(x)
        h, w = x.shape[-2:]
        threshold = F.adaptive_avg_pool2d(x, 1)
        threshold = self.rate_conv(threshold).sigmoid()

        # differentiable box mask: keep the cut-off as a float and soften the edges
        ys = (torch.arange(h, device=x.device) - h // 2).abs().view(1, 1, h, 1)
        xs = (torch.arange(w, device=x.device) - w // 2).abs().view(1, 1, 1, w)
        h_ = h // n * threshold[:, 0:1, :, :]
        w_ = w // n * threshold[:, 1:2, :, :]
        mask = torch.sigmoid(4 * (h_ - ys)) * torch.sigmoid(4 * (w_ - xs))

        fft = torch.fft.fft2(x, norm='forward', dim=(-2, -1))
        fft = self.shift(fft)
        high = torch.abs(torch.fft.ifft2(self.unshift(fft * (1 - mask)), norm='forward', dim=(-2, -1)))
        low = torch.abs(torch.fft.ifft2(self.unshift(fft * mask), norm='forward', dim=(-2, -1)))
        return high, low


dim = 16
model = FreModule(dim)
opt = torch.optim.Adam(model.parameters(), lr=2e-4)
img = torch.rand(2, 3, 32, 32)
feat = torch.randn(2, dim, 16, 16)
target = torch.randn(2, dim, 16, 16)

w0 = model.rate_conv[0].weight.detach().clone()
for step in range(3):
    opt.zero_grad()
    out = model(img, feat)
    loss = F.l1_loss(out, target)
    loss.backward()
    opt.step()

print("conv1 grad is None:", model.conv1.weight.grad is None)
g = model.rate_conv[0].weight.grad
print("rate_conv grad:", g if g is None else g.norm())
print("rate_conv changed:", not torch.equal(w0, model.rate_conv[0].weight))
