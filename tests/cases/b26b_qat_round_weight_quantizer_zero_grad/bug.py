"""PyTorch forums, "Weight Quantization", https://discuss.pytorch.org/t/weight-quantization/50261: to fine-tune a
fixed-point VGG16, the user adds a quantization layer, wq = clip(round(w / stp), a, b) * stp, that every
convolution passes its float weight through before convolving, and asks whether a new backward is needed.
It is: torch.round has a gradient of 0 everywhere, so d(wq)/dw is 0 and the conv weights behind the quantizer get
an all-zero gradient at every step; the optimizer steps them but they never change. Only the step size (whose
gradient, round(w/stp), survives) and the unquantized classifier learn, so the "fine-tuning" leaves the
convolutions exactly as they were.
Fix (the usual one for quantization-aware training): a straight-through estimator, round in the forward pass and
identity in the backward pass, here written as a small autograd.Function used on the same line. VGG16 is
shrunk to two quantized convs and a linear head, ImageNet to seeded random batches; the step size is initialised
to 0.05 (the post's torch.Tensor(1) is uninitialised memory)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn import Parameter

torch.manual_seed(0)
torch.set_num_threads(1)


class Linear_Quantization(nn.Module):
    def __init__(self):
        super().__init__()
        self.bit_width = 8
        self.step_size = Parameter(torch.full((1,), 0.05))

    def forward(self, x):
        x = torch.round(x / self.step_size)  # <- non_differentiable
        x = torch.clamp(x, min=-2**(self.bit_width - 1), max=(2**(self.bit_width - 1) - 1))
        x = x * self.step_size
        return x


class QuantConv2d(nn.Conv2d):
    """A conv layer that feeds its float weight through the quantization layer before convolving."""
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.quant = Linear_Quantization()

    def forward(self, x):
        return F.conv2d(x, self.quant(self.weight), self.bias, self.stride, self.padding)


class TinyVGG(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            QuantConv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            QuantConv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.classifier = nn.Linear(16 * 4 * 4, num_classes)

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


model = TinyVGG()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
criterion = nn.CrossEntropyLoss()
batches = [(torch.randn(8, 3, 16, 16), torch.randint(0, 10, (8,))) for _ in range(4)]
conv_before = model.features[0].weight.detach().clone()

for images, labels in batches:
    optimizer.zero_grad()
    loss = criterion(model(images), labels)
    loss.backward()
    optimizer.step()

conv = model.features[0]
print("conv1 weight grad is all zero:", bool((conv.weight.grad == 0).all()))
print("conv1 weight changed:", not torch.equal(conv_before, conv.weight))
