"""toandaominh1997/EfficientDet.Pytorch issue #161 "Gradient computation error",
https://github.com/toandaominh1997/EfficientDet.Pytorch/issues/161: running train.py, backward fails with
"one of the variables needed for gradient computation has been modified by an inplace operation: [torch.cuda.FloatTensor
[3, 3]], which is output 0 of ReluBackward0, is at version 1; expected version 0 instead". The reporter's own fix, in
models/bifpn.py: the BiFPN's learnable fusion weights are normalised in place, `w1 /= torch.sum(w1, dim=0) +
self.eps`, right after `w1 = self.relu1(self.w1)`; ReLU saved its output for backward, so the in-place division
invalidates it (w2's ReLU is the one backward reaches first). Replace both lines by `w1 = w1/(torch.sum(w1, dim=0) + self.eps)` (and the same for w2).
BiFPNModule below is the repository's (5 levels, so w2 is the [3, 3] tensor of the report), with plain conv+ReLU blocks; a tiny backbone, lateral convs and
a classification head stand in for the detector."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)


class BiFPNModule(nn.Module):
    def __init__(self, channels, levels, init=0.5, eps=0.0001):
        super(BiFPNModule, self).__init__()
        self.eps = eps
        self.levels = levels
        self.bifpn_convs = nn.ModuleList()
        # weighted
        self.w1 = nn.Parameter(torch.Tensor(2, levels).fill_(init))
        self.relu1 = nn.ReLU()
        self.w2 = nn.Parameter(torch.Tensor(3, levels - 2).fill_(init))
        self.relu2 = nn.ReLU()
        for jj in range(2):
            for i in range(self.levels - 1):
                self.bifpn_convs.append(nn.Sequential(nn.Conv2d(channels, channels, 3, padding=1), nn.ReLU()))

    def forward(self, inputs):
        levels = self.levels
        # w relu
        w1 = self.relu1(self.w1)
        w1 /= torch.sum(w1, dim=0) + self.eps  # normalize
        w2 = self.relu2(self.w2)
        w2 /= torch.sum(w2, dim=0) + self.eps  # normalize  # <- inplace_saved
        # build top-down
        idx_bifpn = 0
        pathtd = inputs
        inputs_clone = []
        for in_tensor in inputs:
            inputs_clone.append(in_tensor.clone())
        for i in range(levels - 1, 0, -1):
            pathtd[i - 1] = (w1[0, i-1]*pathtd[i - 1] + w1[1, i-1]*F.interpolate(
                pathtd[i], scale_factor=2, mode='nearest'))/(w1[0, i-1] + w1[1, i-1] + self.eps)
            pathtd[i - 1] = self.bifpn_convs[idx_bifpn](pathtd[i - 1])
            idx_bifpn = idx_bifpn + 1
        # build down-top
        for i in range(0, levels - 2, 1):
            pathtd[i + 1] = (w2[0, i] * pathtd[i + 1] + w2[1, i] * F.max_pool2d(pathtd[i], kernel_size=2) +
                             w2[2, i] * inputs_clone[i + 1])/(w2[0, i] + w2[1, i] + w2[2, i] + self.eps)
            pathtd[i + 1] = self.bifpn_convs[idx_bifpn](pathtd[i + 1])
            idx_bifpn = idx_bifpn + 1
        pathtd[levels - 1] = (w1[0, levels-1] * pathtd[levels - 1] + w1[1, levels-1] * F.max_pool2d(
            pathtd[levels - 2], kernel_size=2))/(w1[0, levels-1] + w1[1, levels-1] + self.eps)
        pathtd[levels - 1] = self.bifpn_convs[idx_bifpn](pathtd[levels - 1])
        return pathtd


class TinyEfficientDet(nn.Module):
    def __init__(self, channels=8, num_classes=4):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        widths = (8, 12, 16, 24, 32, 40)
        self.stages = nn.ModuleList([nn.Conv2d(widths[i], widths[i + 1], 3, stride=2, padding=1) for i in range(5)])
        self.lateral_convs = nn.ModuleList([nn.Conv2d(c, channels, 1) for c in widths[1:]])
        self.bifpn = BiFPNModule(channels, levels=5)
        self.head = nn.Linear(channels * 5, num_classes)

    def forward(self, x):
        x = F.relu(self.stem(x))
        feats = []
        for stage in self.stages:
            x = F.relu(stage(x))
            feats.append(x)
        laterals = [conv(f) for conv, f in zip(self.lateral_convs, feats)]
        outs = self.bifpn(laterals)
        return self.head(torch.cat([o.mean(dim=(2, 3)) for o in outs], dim=1))


torch.manual_seed(0)
model = TinyEfficientDet()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
w1_before = model.bifpn.w1.detach().clone()
w2_before = model.bifpn.w2.detach().clone()
for step in range(3):
    images = torch.randn(4, 3, 64, 64)
    labels = torch.randint(0, 4, (4,))
    loss = F.cross_entropy(model(images), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print("step", step, "loss", round(loss.item(), 4))
print("bifpn.w1 changed:", not torch.equal(w1_before, model.bifpn.w1))
print("bifpn.w2 changed:", not torch.equal(w2_before, model.bifpn.w2))
