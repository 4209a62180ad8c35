"""The fixed twin: the Detect head decodes out of place (split, transform, cat), as YOLOv5's `inplace=False` branch
does, so the sigmoid output stays as saved (WongKinYiu/yolov7#1935)."""
import torch
from torch import nn


class Detect(nn.Module):
    def __init__(self, nc=2, ch=8, na=3):
        super().__init__()
        self.nc, self.no, self.na = nc, nc + 5, na
        self.m = nn.Conv2d(ch, self.no * na, 1)
        self.register_buffer("anchor_grid", torch.tensor([10., 13., 16., 30., 33., 23.]).view(1, na, 1, 1, 2))
        self.stride = 8.0

    def forward(self, x):
        bs, _, ny, nx = x.shape
        x = self.m(x).view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
        yv, xv = torch.meshgrid(torch.arange(ny), torch.arange(nx), indexing="ij")
        grid = torch.stack((xv, yv), 2).view(1, 1, ny, nx, 2).float()
        y = x.sigmoid()
        xy, wh, conf = y.split((2, 2, self.nc + 1), 4)
        xy = (xy * 2. - 0.5 + grid) * self.stride
        wh = (wh * 2) ** 2 * self.anchor_grid
        y = torch.cat((xy, wh, conf), 4)
        return y.view(bs, -1, self.no), x


torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 8, 3, stride=8, padding=1), nn.SiLU(), Detect())
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
inputs_t = torch.rand(2, 3, 32, 32)
for step in range(2):
    outputs, train_output = model(inputs_t)
    conf = outputs[..., 4:5] * outputs[..., 5:]
    loss = -(conf * torch.log(conf + 1e-8)).sum(-1).mean()  # entropy of the class confidences
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"detect conv grad set: {model[2].m.weight.grad is not None}")
