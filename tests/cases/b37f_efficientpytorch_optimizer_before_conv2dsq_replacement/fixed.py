"""Sparse + quantized training (hustzxd/EfficientPyTorch#1): the optimizer is defined before
replace_conv_recursively swaps every nn.Conv2d for a Conv2dSQ (sparsity mask + fake quantization), so
it holds the old convolutions' parameters and the convolutions the model now runs never update."""
import torch
from torch import nn
import torch.nn.functional as F


class Conv2dSQ(nn.Conv2d):
    """Conv2d with a magnitude sparsity mask and nbits fake-quantized weights (straight-through)."""

    def __init__(self, *args, nbits_w=4, sparsity=0.5, **kwargs):
        super().__init__(*args, **kwargs)
        self.nbits_w, self.sparsity = nbits_w, sparsity

    def forward(self, x):
        w = self.weight
        with torch.no_grad():
            k = int(w.numel() * self.sparsity)
            thr = w.abs().flatten().kthvalue(k).values
            mask = (w.abs() > thr).float()
            scale = w.abs().max() / (2 ** (self.nbits_w - 1) - 1)
        w_q = w + ((w / scale).round() * scale - w).detach()
        return F.conv2d(x, w_q * mask, self.bias, self.stride, self.padding)


def replace_conv_recursively(model, nbits_w, sparsity):
    for name, child in model.named_children():
        if isinstance(child, nn.Conv2d):
            new = Conv2dSQ(child.in_channels, child.out_channels, child.kernel_size, stride=child.stride,
                           padding=child.padding, bias=child.bias is not None, nbits_w=nbits_w, sparsity=sparsity)
            new.load_state_dict(child.state_dict())
            setattr(model, name, new)
        else:
            replace_conv_recursively(child, nbits_w, sparsity)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        return self.fc(self.features(x).flatten(1))


def get_optimizer(model, lr=0.05):
    return torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=1e-4)


torch.manual_seed(0)
model = Net()
criterion = nn.CrossEntropyLoss()
# prune and quantize the model
replace_conv_recursively(model, nbits_w=4, sparsity=0.5)
optimizer = get_optimizer(model)  # defined after the Conv2d replacement

x, y = torch.randn(16, 3, 16, 16), torch.randint(0, 10, (16,))
before = model.features[0].weight.detach().clone()
for it in range(5):
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    print(f"iter {it}: loss {loss.item():.4f}")
print("conv1 weight changed:", not torch.equal(before, model.features[0].weight))
