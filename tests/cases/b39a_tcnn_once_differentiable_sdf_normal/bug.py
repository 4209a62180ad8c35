# NeuS-style SDF model on a tiny-cuda-nn style encoding. The encoding is a custom
# autograd.Function whose backward is @once_differentiable (as in tcnn); the SDF
# gradient (surface normal) is taken with autograd.grad and fed into the loss.
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd.function import once_differentiable

torch.manual_seed(0)


class _EncodingFunction(torch.autograd.Function):
    # stand-in for tcnn's _module_function: fused forward, hand-written backward
    @staticmethod
    def forward(ctx, x, params):
        ctx.save_for_backward(x, params)
        return torch.sin(x @ params)

    @staticmethod
    @once_differentiable
    def backward(ctx, doutput):
        x, params = ctx.saved_tensors
        g = doutput * torch.cos(x @ params)
        return g @ params.t(), x.t() @ g


class Encoding(nn.Module):
    def __init__(self, n_in=3, n_out=16):
        super().__init__()
        self.params = nn.Parameter(torch.randn(n_in, n_out))

    def forward(self, x):
        return _EncodingFunction.apply(x, self.params)


class SDFNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoding = Encoding()
        self.mlp = nn.Sequential(nn.Linear(16, 32), nn.Softplus(), nn.Linear(32, 1 + 8))

    def forward(self, x):
        out = self.mlp(self.encoding(x))
        return out[..., :1], out[..., 1:]


class ColorNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(3 + 3 + 8, 32), nn.ReLU(), nn.Linear(32, 3))

    def forward(self, x, normal, feat):
        return torch.sigmoid(self.mlp(torch.cat([x, normal, feat], dim=-1)))


sdf_net, color_net = SDFNet(), ColorNet()
opt = torch.optim.Adam(list(sdf_net.parameters()) + list(color_net.parameters()), lr=1e-3)

pts = torch.rand(64, 3) * 2 - 1
target_rgb = torch.rand(64, 3)

for step in range(3):
    opt.zero_grad()
    x = pts.clone().requires_grad_(True)
    sdf, feat = sdf_net(x)
    normal = torch.autograd.grad(sdf, x, torch.ones_like(sdf), create_graph=True)[0]  # <- autograd_error
    rgb = color_net(x, normal, feat)
    eikonal = ((normal.norm(dim=-1) - 1) ** 2).mean()
    loss = F.mse_loss(rgb, target_rgb) + 0.1 * eikonal
    loss.backward()
    opt.step()
    print(step, loss.item(), sdf_net.encoding.params.grad.abs().sum().item())
