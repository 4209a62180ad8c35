"""Folding BatchNorm into a convolution before testing (PingoLH/FCHarDNet#61): the folded weights are
written with `cconv.weight[:,:,:,:] = W` while grad mode is on, and PyTorch raises "a view of a leaf
Variable that requires grad is being used in an in-place operation"."""
import torch
from torch import nn

torch.manual_seed(0)
conv = nn.Conv2d(3, 4, 3, padding=1, bias=False)
bn = nn.BatchNorm2d(4)
bn.eval()
cconv = nn.Conv2d(3, 4, 3, padding=1, bias=True)
std = (bn.running_var + bn.eps).sqrt()
W = conv.weight * (bn.weight / std).view(-1, 1, 1, 1)
b = bn.bias - bn.weight * bn.running_mean / std
cconv.weight[:, :, :, :] = W[:, :, :, :]  # <- autograd_error
cconv.bias[:] = b[:]
x = torch.randn(1, 3, 8, 8)
print("max difference after folding:", (cconv(x) - bn(conv(x))).abs().max().item())
