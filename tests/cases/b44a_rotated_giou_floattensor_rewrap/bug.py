# Rotated-box regression head trained with a GIoU-style loss whose smallest
# enclosing box is found per pair by brute force over candidate edges (the
# "rotating calipers" idea), the per-pair results collected into a FloatTensor.
import math
import torch
import torch.nn as nn

torch.manual_seed(0)


class RotatedBoxHead(nn.Module):
    def __init__(self, c=16):
        super().__init__()
        self.feat = nn.Sequential(nn.Conv2d(3, c, 3, padding=1), nn.ReLU(),
                                  nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.reg = nn.Linear(c, 5)  # cx, cy, w, h, angle

    def forward(self, x):
        out = self.reg(self.feat(x))
        cxcy = out[:, :2]
        wh = out[:, 2:4].exp()
        ang = out[:, 4:5]
        return torch.cat([cxcy, wh, ang], dim=1)


def corners(box):
    cx, cy, w, h, a = box
    c, s = torch.cos(a), torch.sin(a)
    dx = torch.stack([w / 2, -w / 2, -w / 2, w / 2])
    dy = torch.stack([h / 2, h / 2, -h / 2, -h / 2])
    return torch.stack([cx + dx * c - dy * s, cy + dx * s + dy * c], dim=1)


def smallest_enclosing_area(pts):
    # brute force: one side of the min box is collinear with an edge of the hull
    best = None
    n = pts.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            e = pts[j] - pts[i]
            theta = torch.atan2(e[1], e[0])
            c, s = torch.cos(theta), torch.sin(theta)
            x = pts[:, 0] * c + pts[:, 1] * s
            y = -pts[:, 0] * s + pts[:, 1] * c
            area = (x.max() - x.min()) * (y.max() - y.min())
            best = area if best is None else torch.minimum(best, area)
    return best


def giou_loss(pred, target):
    values = []
    for p, t in zip(pred, target):
        pts = torch.cat([corners(p), corners(t)], dim=0)
        enclosing = smallest_enclosing_area(pts)
        area_p, area_t = p[2] * p[3], t[2] * t[3]
        union = area_p + area_t  # no-overlap approximation of the union
        values.append(1.0 - (-(enclosing - union) / enclosing))
    per_box = torch.FloatTensor(values).requires_grad_()  # <- tensor_rewrap
    return per_box.mean()


model = RotatedBoxHead()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
images = torch.randn(4, 3, 16, 16)
targets = torch.tensor([[0.5, 0.5, 2.0, 1.0, 0.3],
                        [-0.2, 0.1, 1.5, 1.5, -0.4],
                        [0.0, -0.3, 1.0, 2.5, 1.1],
                        [0.7, 0.2, 2.2, 0.8, math.pi / 6]])

for step in range(2):
    opt.zero_grad()
    loss = giou_loss(model(images), targets)
    loss.backward()
    opt.step()
    print("step", step, "loss", float(loss))

print("reg.weight.grad:", model.reg.weight.grad)
