"""pytorch_refinenet (thomasjpfan/pytorch_refinenet) issue #2,
https://github.com/thomasjpfan/pytorch_refinenet/issues/2: after working around an in-place error, the
reporter noticed that in pytorch_refinenet/blocks.py RefineNetBlock.forward "seems to write rcu no
effect": the loop `for i, x in enumerate(xs): x = self.__getattr__("rcu{}".format(i))(x)` rebinds the
loop variable only, and the multi-resolution fusion is then called on the original inputs
`self.mrf(*xs)` (or `out = xs[0]`), so the residual conv units' outputs are thrown away and their
convolutions never get a gradient. The maintainer confirmed ("Thank you for reporting the bug. I have
just fixed it."): the fixed block collects `rcu_xs.append(self.__getattr__(f"rcu{i}")(x))` and fuses
`self.mrf(*rcu_xs)` / `out = rcu_xs[0]`.
The ResNet-101 encoder is two small conv stages, the cascade has two RefineNet blocks instead of four,
and the segmentation targets are random. ChainedResidualPool is the repository's later, out-of-place
version, and its ReLU is not in-place here: the reporter had already worked around the in-place error
(with the dropped RCU's in-place ReLU and CRP's in-place ReLU both writing xs[0], backward raises)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)


class ResidualConvUnit(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.conv1 = nn.Conv2d(features, features, kernel_size=3, stride=1, padding=1, bias=True)
        self.conv2 = nn.Conv2d(features, features, kernel_size=3, stride=1, padding=1, bias=False)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        out = self.relu(x)
        out = self.conv1(out)
        out = self.relu(out)
        out = self.conv2(out)
        return out + x


class MultiResolutionFusion(nn.Module):
    def __init__(self, out_feats, *shapes):
        super().__init__()
        _, max_size = max(shapes, key=lambda x: x[1])
        for i, (feat, size) in enumerate(shapes):
            scale_factor = max_size // size
            layers = [nn.Conv2d(feat, out_feats, kernel_size=3, stride=1, padding=1, bias=False)]
            if scale_factor != 1:
                layers.append(nn.Upsample(scale_factor=scale_factor, mode='bilinear', align_corners=True))
            self.add_module("resolve{}".format(i), nn.Sequential(*layers))

    def forward(self, *xs):
        output = self.resolve0(xs[0])
        for i, x in enumerate(xs[1:], 1):
            output += self.__getattr__("resolve{}".format(i))(x)
        return output


class ChainedResidualPool(nn.Module):
    def __init__(self, feats):
        super().__init__()
        self.relu = nn.ReLU()
        for i in range(1, 4):
            self.add_module("block{}".format(i), nn.Sequential(
                nn.MaxPool2d(kernel_size=5, stride=1, padding=2),
                nn.Conv2d(feats, feats, kernel_size=3, stride=1, padding=1, bias=False)))

    def forward(self, x):
        x = self.relu(x)
        path = x
        for i in range(1, 4):
            path = self.__getattr__("block{}".format(i))(path)
            x = x + path
        return x


class RefineNetBlock(nn.Module):
    def __init__(self, features, *shapes):
        super().__init__()
        for i, shape in enumerate(shapes):
            feats = shape[0]
            self.add_module("rcu{}".format(i), nn.Sequential(ResidualConvUnit(feats), ResidualConvUnit(feats)))
        self.mrf = MultiResolutionFusion(features, *shapes) if len(shapes) != 1 else None
        self.crp = ChainedResidualPool(features)
        self.output_conv = ResidualConvUnit(features)

    def forward(self, *xs):
        for i, x in enumerate(xs):
            x = self.__getattr__("rcu{}".format(i))(x)  # <- unused_parameter
        if self.mrf is not None:
            out = self.mrf(*xs)
        else:
            out = xs[0]
        out = self.crp(out)
        return self.output_conv(out)


class RefineNet2Cascade(nn.Module):
    def __init__(self, input_size=32, num_classes=3, features=16):
        super().__init__()
        self.layer1 = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                    nn.Conv2d(16, 16, 3, stride=2, padding=1))
        self.layer2 = nn.Sequential(nn.ReLU(), nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32))
        self.layer1_rn = nn.Conv2d(16, features, kernel_size=3, stride=1, padding=1, bias=False)
        self.layer2_rn = nn.Conv2d(32, 2 * features, kernel_size=3, stride=1, padding=1, bias=False)
        self.refinenet2 = RefineNetBlock(2 * features, (2 * features, input_size // 8))
        self.refinenet1 = RefineNetBlock(features, (2 * features, input_size // 8), (features, input_size // 4))
        self.output_conv = nn.Conv2d(features, num_classes, kernel_size=1)

    def forward(self, x):
        layer_1 = self.layer1(x)
        layer_2 = self.layer2(layer_1)
        path_2 = self.refinenet2(self.layer2_rn(layer_2))
        path_1 = self.refinenet1(path_2, self.layer1_rn(layer_1))
        return self.output_conv(path_1)


torch.manual_seed(0)
net = RefineNet2Cascade()
optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
for step in range(3):
    images = torch.randn(2, 3, 32, 32)
    labels = torch.randint(0, 3, (2, 32, 32))
    logits = F.interpolate(net(images), size=labels.shape[-2:], mode='bilinear', align_corners=True)
    loss = F.cross_entropy(logits, labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print("step", step, "loss", round(loss.item(), 4))

print("refinenet1.rcu0[0].conv1.weight.grad is None:", net.refinenet1.rcu0[0].conv1.weight.grad is None)
print("refinenet2.rcu0[1].conv2.weight.grad is None:", net.refinenet2.rcu0[1].conv2.weight.grad is None)
