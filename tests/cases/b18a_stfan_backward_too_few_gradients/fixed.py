"""STFAN (sczhou/STFAN): KernelConv2DFunction.backward returns too few gradients.

Source: https://github.com/sczhou/STFAN/issues/8

What the user saw: training crashes at loss.backward() with
"RuntimeError: function KernelConv2DFunctionBackward returned an incorrect number of gradients
(expected 3, got 2)".

Why: forward(ctx, input, kernel, kernel_size) takes three inputs (kernel_size is a plain int), but when
the Function was turned into a static-method Function the backward kept returning only
(grad_input, grad_kernel). A custom backward must return one gradient per forward input, None for the
non-tensor kernel_size.

Fix (author's answer): return grad_input, grad_kernel, None.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class KernelConv2DFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, kernel, kernel_size):
        b, c, h, w = input.shape
        ctx.kernel_size = kernel_size
        cols = F.unfold(input, kernel_size, padding=kernel_size // 2).view(b, c, kernel_size ** 2, h, w)
        ker = kernel.view(b, c, kernel_size ** 2, h, w)
        ctx.save_for_backward(cols, ker)
        ctx.shape = (b, c, h, w)
        return (cols * ker).sum(2)

    @staticmethod
    def backward(ctx, grad_output):
        cols, ker = ctx.saved_tensors
        b, c, h, w = ctx.shape
        k = ctx.kernel_size
        g = grad_output.unsqueeze(2)
        grad_kernel = (cols * g).view(b, c * k * k, h, w)
        grad_cols = (ker * g).view(b, c * k * k, h * w)
        grad_input = F.fold(grad_cols, (h, w), k, padding=k // 2)
        return grad_input, grad_kernel, None


class KernelConv2D(nn.Module):
    def __init__(self, kernel_size=3):
        super().__init__()
        self.kernel_size = kernel_size

    def forward(self, input, kernel):
        return KernelConv2DFunction.apply(input, kernel, self.kernel_size)


class FilterNet(nn.Module):
    def __init__(self, c=3, k=3):
        super().__init__()
        self.kconv_warp = nn.Conv2d(c, c * k * k, 3, padding=1)
        self.kernel_conv = KernelConv2D(k)
        self.out = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, img):
        kernel = self.kconv_warp(img)
        return self.out(self.kernel_conv(img, kernel))


net = FilterNet()
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
img, gt = torch.randn(2, 3, 8, 8), torch.randn(2, 3, 8, 8)
for step in range(3):
    loss = F.mse_loss(net(img), gt)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.4f}")
print("kconv_warp.weight.grad is None:", net.kconv_warp.weight.grad is None)
