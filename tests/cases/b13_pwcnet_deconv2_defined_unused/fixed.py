"""PWC-Net in PyTorch (NVlabs/PWC-Net#110): PWCDCNet.__init__ builds an upsampling deconv at every pyramid level,
also `self.deconv2` at the last level, but forward() never upsamples flow2 (the context network refines it instead).
deconv2's weights get no gradient at all, sit in the optimizer for nothing, and make DistributedDataParallel demand
find_unused_parameters=True (the report: delete the layer)."""
import torch
import torch.nn.functional as F
from torch import nn


def conv(cin, cout, dilation=1):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, 1, dilation, dilation), nn.LeakyReLU(0.1))


def deconv(cin, cout):
    return nn.ConvTranspose2d(cin, cout, 4, 2, 1)


def cost_volume(f1, f2, md=1):
    f2 = F.pad(f2, [md] * 4)
    h, w = f1.shape[-2:]
    return torch.cat([(f1 * f2[..., dy:dy + h, dx:dx + w]).mean(1, keepdim=True)
                      for dy in range(2 * md + 1) for dx in range(2 * md + 1)], 1)


def warp(x, flo):
    b, _, h, w = x.shape
    ys, xs = torch.meshgrid(torch.linspace(-1, 1, h), torch.linspace(-1, 1, w), indexing="ij")
    grid = torch.stack((xs, ys), -1).expand(b, h, w, 2) + flo.permute(0, 2, 3, 1) * 2 / max(w - 1, 1)
    return F.grid_sample(x, grid, align_corners=True)


class PWCDCNet(nn.Module):
    def __init__(self, nd=9):
        super().__init__()
        self.conv1, self.conv2 = conv(3, 8), nn.Sequential(nn.Conv2d(8, 16, 3, 2, 1), nn.LeakyReLU(0.1))
        self.conv3_0, self.predict_flow3 = conv(nd, 16), nn.Conv2d(16 + nd, 2, 3, 1, 1)
        self.deconv3, self.upfeat3 = deconv(2, 2), deconv(16 + nd, 2)
        self.conv2_0, self.predict_flow2 = conv(nd + 8 + 4, 16), nn.Conv2d(16 + nd + 12, 2, 3, 1, 1)
        self.dc_conv1, self.dc_conv2 = conv(16 + nd + 12, 16, 2), nn.Conv2d(16, 2, 3, 1, 1)

    def forward(self, im1, im2):
        c12, c22 = self.conv1(im1), self.conv1(im2)
        c13, c23 = self.conv2(c12), self.conv2(c22)
        corr3 = F.leaky_relu(cost_volume(c13, c23), 0.1)
        x = torch.cat((self.conv3_0(corr3), corr3), 1)
        flow3 = self.predict_flow3(x)
        up_flow3, up_feat3 = self.deconv3(flow3), self.upfeat3(x)
        corr2 = F.leaky_relu(cost_volume(c12, warp(c22, up_flow3)), 0.1)
        x = torch.cat((corr2, c12, up_flow3, up_feat3), 1)
        x = torch.cat((self.conv2_0(x), x), 1)
        flow2 = self.predict_flow2(x) + self.dc_conv2(self.dc_conv1(x))
        return flow2, flow3


torch.manual_seed(0)
model = PWCDCNet()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
before = {n: p.detach().clone() for n, p in model.named_parameters()}
im1, im2, flow_gt = torch.randn(2, 3, 16, 16), torch.randn(2, 3, 16, 16), torch.randn(2, 2, 16, 16)
flow2, flow3 = model(im1, im2)
loss = (flow2 - flow_gt).norm(dim=1).mean() + 0.5 * (flow3 - flow_gt[:, :, ::2, ::2]).norm(dim=1).mean()
optimizer.zero_grad()
loss.backward()
optimizer.step()
print(f"loss {loss.item():.4f}; every parameter got a grad and changed:",
      all(p.grad is not None and not torch.equal(before[n], p) for n, p in model.named_parameters()))
