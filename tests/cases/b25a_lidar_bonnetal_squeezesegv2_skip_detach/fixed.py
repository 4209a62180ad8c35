"""PRBonn/lidar-bonnetal issue #99 "Stop-gradients in skip-connections",
https://github.com/PRBonn/lidar-bonnetal/issues/99: in the SqueezeSegV2 backbone (train/backbones/squeezesegV2.py)
the first skip connection is stored as `skips[1] = skip_in.detach()`, where `skip_in = self.conv1b(x)`. The
output of conv1b is used nowhere else, so the detach cuts conv1b (and its BatchNorm) off every loss: the reporter
ran backward through encoder and decoder and printed `conv1b.0.weight is None`, `conv1b.0.bias is None`,
`conv1b.1.weight is None`, `conv1b.1.bias is None`; a maintainer answered that the skip detaches were a deliberate
choice but the conv1b layer then never trains. At run time conv1b's Conv2d and BatchNorm2d sit in the optimizer but get
grad None and never change.
Fix: store the first skip without the detach (`skips[1] = skip_in`), so conv1b is trained through the decoder's
first skip. The other skips (run_layer's `skips[os] = x.detach()`) are the repo's deliberate design and cut nothing
meant to learn: their inputs reach the loss through the main path too. Fire/CAM blocks, the decoder and the
segmentation head are short stand-ins for the repo's modules (convolutions followed by BatchNorm are built with
bias=False here: the repo's biases there get only rounding-noise gradients); the input is a small random range image."""
import torch
import torch.nn as nn


# --- lidar-bonnetal Fire / CAM blocks (shortened) -----------------------------------------------
class Fire(nn.Module):
    def __init__(self, inplanes, squeeze_planes, expand1x1_planes, expand3x3_planes, bn_d=0.1):
        super(Fire, self).__init__()
        self.activation = nn.ReLU(inplace=True)
        self.squeeze = nn.Conv2d(inplanes, squeeze_planes, kernel_size=1, bias=False)
        self.squeeze_bn = nn.BatchNorm2d(squeeze_planes, momentum=bn_d)
        self.expand1x1 = nn.Conv2d(squeeze_planes, expand1x1_planes, kernel_size=1, bias=False)
        self.expand1x1_bn = nn.BatchNorm2d(expand1x1_planes, momentum=bn_d)
        self.expand3x3 = nn.Conv2d(squeeze_planes, expand3x3_planes, kernel_size=3, padding=1, bias=False)
        self.expand3x3_bn = nn.BatchNorm2d(expand3x3_planes, momentum=bn_d)

    def forward(self, x):
        x = self.activation(self.squeeze_bn(self.squeeze(x)))
        return torch.cat([
            self.activation(self.expand1x1_bn(self.expand1x1(x))),
            self.activation(self.expand3x3_bn(self.expand3x3(x)))
        ], 1)


class CAM(nn.Module):
    def __init__(self, inplanes, bn_d=0.1):
        super(CAM, self).__init__()
        self.pool = nn.MaxPool2d(7, 1, 3)
        self.squeeze = nn.Conv2d(inplanes, inplanes // 16, kernel_size=1, stride=1, bias=False)
        self.squeeze_bn = nn.BatchNorm2d(inplanes // 16, momentum=bn_d)
        self.relu = nn.ReLU(inplace=True)
        self.unsqueeze = nn.Conv2d(inplanes // 16, inplanes, kernel_size=1, stride=1, bias=False)
        self.unsqueeze_bn = nn.BatchNorm2d(inplanes, momentum=bn_d)
        self.sigmoid = nn.Sigmoid()

    def forward(self, x):
        y = self.pool(x)
        y = self.relu(self.squeeze_bn(self.squeeze(y)))
        y = self.sigmoid(self.unsqueeze_bn(self.unsqueeze(y)))
        return y * x


# --- train/backbones/squeezesegV2.py (two encoder stages kept) -----------------------------------
class Backbone(nn.Module):
    def __init__(self, input_depth=5, bn_d=0.1):
        super(Backbone, self).__init__()
        self.input_depth = input_depth
        self.strides = [2, 2]
        # encoder
        self.conv1a = nn.Sequential(nn.Conv2d(self.input_depth, 64, kernel_size=3,
                                              stride=[1, self.strides[0]], padding=1, bias=False),
                                    nn.BatchNorm2d(64, momentum=bn_d),
                                    nn.ReLU(inplace=True),
                                    CAM(64, bn_d=bn_d))
        self.conv1b = nn.Sequential(nn.Conv2d(self.input_depth, 64, kernel_size=1, stride=1, padding=0, bias=False),
                                    nn.BatchNorm2d(64, momentum=bn_d))
        self.fire23 = nn.Sequential(nn.MaxPool2d(kernel_size=3, stride=[1, self.strides[1]], padding=1),
                                    Fire(64, 16, 64, 64, bn_d=bn_d),
                                    CAM(128, bn_d=bn_d))
        self.last_channels = 128

    def run_layer(self, x, layer, skips, os):
        y = layer(x)
        if y.shape[2] < x.shape[2] or y.shape[3] < x.shape[3]:
            skips[os] = x.detach()
            os *= 2
        x = y
        return x, skips, os

    def forward(self, x):
        # run cnn
        # store for skip connections
        skips = {}
        os = 1

        # encoder
        skip_in = self.conv1b(x)
        x = self.conv1a(x)
        # first skip done manually
        skips[1] = skip_in
        os *= 2

        x, skips, os = self.run_layer(x, self.fire23, skips, os)
        return x, skips


# --- decoder + head stand-in (train/tasks/semantic/decoders/squeezesegV2.py, shortened) -------------
class Decoder(nn.Module):
    def __init__(self, n_classes=4):
        super(Decoder, self).__init__()
        self.firedec1 = nn.Sequential(nn.ConvTranspose2d(128, 64, kernel_size=[1, 4], stride=[1, 2], padding=[0, 1]),
                                      nn.ReLU(inplace=True))
        self.firedec2 = nn.Sequential(nn.ConvTranspose2d(64, 64, kernel_size=[1, 4], stride=[1, 2], padding=[0, 1]),
                                      nn.ReLU(inplace=True))
        self.head = nn.Conv2d(64, n_classes, kernel_size=3, padding=1)

    def forward(self, x, skips):
        x = self.firedec1(x) + skips[2]   # os 4 -> 2, add skip of os 2
        x = self.firedec2(x) + skips[1]   # os 2 -> 1, add skip of os 1 (conv1b's output)
        return self.head(x)


torch.manual_seed(0)
torch.set_num_threads(1)
encoder = Backbone()
decoder = Decoder()
optimizer = torch.optim.SGD(list(encoder.parameters()) + list(decoder.parameters()), lr=0.01, momentum=0.9)
criterion = nn.CrossEntropyLoss()

conv1b_before = encoder.conv1b[0].weight.detach().clone()
for step in range(3):
    scan = torch.randn(2, 5, 16, 64)            # range image: range, x, y, z, remission
    labels = torch.randint(0, 4, (2, 16, 64))
    optimizer.zero_grad()
    output = decoder(*encoder(scan))
    loss = criterion(output, labels)
    loss.backward()
    optimizer.step()

for name, p in encoder.named_parameters():
    if p.grad is None:
        print(name, "is None")
print("conv1b changed:", not torch.equal(conv1b_before, encoder.conv1b[0].weight))
