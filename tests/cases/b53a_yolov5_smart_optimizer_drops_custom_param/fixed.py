# `smart_optimizer()` revert to weight with decay  (ultralytics/yolov5 PR #9817, merged)
# https://github.com/ultralytics/yolov5/pull/9817
# What went wrong: smart_optimizer() built its three parameter groups by looking at module
# attributes only (`v.bias`, BatchNorm `v.weight`, other `v.weight`). A parameter with any
# other name -- e.g. the learnable fusion weights `w` of a BiFPN_Concat layer added to the
# model yaml -- lands in no group, so it gets a .grad every step but is never updated.
# Fix: iterate `v.named_parameters(recurse=0)` and send every parameter that is not a bias
# or a norm weight to g[0] ("If a parameter does not fall into any other category").
import torch
import torch.nn as nn

torch.manual_seed(0)


class Conv(nn.Module):
    def __init__(self, c1, c2, k=1, s=1):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(c2)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class BiFPN_Concat2(nn.Module):
    # weighted concat of two feature maps (BiFPN fast normalized fusion)
    def __init__(self, dimension=1):
        super().__init__()
        self.d = dimension
        self.w = nn.Parameter(torch.ones(2, dtype=torch.float32), requires_grad=True)
        self.epsilon = 0.0001

    def forward(self, x):
        w = self.w
        weight = w / (torch.sum(w, dim=0) + self.epsilon)
        return torch.cat([weight[0] * x[0], weight[1] * x[1]], self.d)


class DetectionModel(nn.Module):
    def __init__(self, nc=2, na=3):
        super().__init__()
        self.model = nn.ModuleList([
            Conv(3, 8, 3, 2), Conv(8, 16, 3, 2), Conv(16, 16, 1, 1),
            BiFPN_Concat2(1), nn.Conv2d(32, na * (5 + nc), 1)])

    def forward(self, x):
        m = self.model
        p3 = m[1](m[0](x))
        y = m[3]([p3, m[2](p3)])
        return m[4](y)


def smart_optimizer(model, name="Adam", lr=0.001, momentum=0.9, decay=1e-5):
    # YOLOv5 3-param group optimizer: 0) weights with decay, 1) weights no decay, 2) biases no decay
    g = [], [], []  # optimizer parameter groups
    bn = tuple(v for k, v in nn.__dict__.items() if "Norm" in k)  # normalization layers, i.e. BatchNorm2d()
    for v in model.modules():
        for p_name, p in v.named_parameters(recurse=0):
            if p_name == "bias":  # bias (no decay)
                g[2].append(p)
            elif p_name == "weight" and isinstance(v, bn):  # weight (no decay)
                g[1].append(p)
            else:
                g[0].append(p)  # weight (with decay)

    if name == "Adam":
        optimizer = torch.optim.Adam(g[2], lr=lr, betas=(momentum, 0.999))  # adjust beta1 to momentum
    elif name == "SGD":
        optimizer = torch.optim.SGD(g[2], lr=lr, momentum=momentum, nesterov=True)
    else:
        raise NotImplementedError(f"Optimizer {name} not implemented.")
    optimizer.add_param_group({"params": g[0], "weight_decay": decay})  # add g0 with weight_decay
    optimizer.add_param_group({"params": g[1], "weight_decay": 0.0})  # add g1 (BatchNorm2d weights)
    print(f"optimizer: {type(optimizer).__name__}(lr={lr}) with parameter groups "
          f"{len(g[1])} weight(decay=0.0), {len(g[0])} weight(decay={decay}), {len(g[2])} bias")
    return optimizer


model = DetectionModel()
hyp = {"lr0": 0.01, "momentum": 0.937, "weight_decay": 0.0005}
optimizer = smart_optimizer(model, "SGD", hyp["lr0"], hyp["momentum"], hyp["weight_decay"])

imgs = torch.randn(4, 3, 32, 32)
targets = torch.randn(4, 21, 8, 8)
bifpn = model.model[3]
for i in range(3):
    pred = model(imgs)
    loss = nn.functional.mse_loss(pred, targets)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    print(f"iter {i} loss {loss.item():.4f} bifpn.w {bifpn.w.tolist()}")
print("bifpn.w after training:", bifpn.w.tolist())
