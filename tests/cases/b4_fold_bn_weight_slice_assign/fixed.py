"""The fixed twin: the folding runs under torch.no_grad(), so the copies into the new conv are plain
writes."""
import torch
from torch import nn

torch.manual_seed(0)
conv = nn.Conv2d(3, 4, 3, padding=1, bias=False)
bn = nn.BatchNorm2d(4)
bn.eval()
cconv = nn.Conv2d(3, 4, 3, padding=1, bias=True)
with torch.no_grad():
    std = (bn.running_var + bn.eps).sqrt()
    W = conv.weight * (bn.weight / std).view(-1, 1, 1, 1)
    b = bn.bias - bn.weight * bn.running_mean / std
    cconv.weight[:, :, :, :] = W[:, :, :, :]
    cconv.bias[:] = b[:]
x = torch.randn(1, 3, 8, 8)
print("max difference after folding:", (cconv(x) - bn(conv(x))).abs().max().item())
