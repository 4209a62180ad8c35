# Calling GSDRUNet disables gradient computations
# https://github.com/deepinv/deepinv/issues/166  (fixed by https://github.com/deepinv/deepinv/pull/167)
#
# What went wrong: GSPnP.potential_grad (the gradient-step denoiser, i.e. the gradient
# of the learned potential g(x) = 1/2 ||x - N(x)||^2) turned autograd on with
# torch.set_grad_enabled(True) to take the Jacobian-vector product, and then, when not
# training, switched it globally OFF with torch.set_grad_enabled(False) and never
# restored it. After one call of the denoiser every later computation in the program
# builds no graph: the reporter's y = x**2 - 2 has requires_grad False and backward fails.
# Fix (PR #167): compute N and JN inside a `with torch.enable_grad():` block instead of
# flipping the global grad mode, so the caller's mode is restored on exit.
import torch
import torch.nn as nn

torch.manual_seed(0)


class DRUNet(nn.Module):
    """Tiny stand-in for deepinv.models.drunet.DRUNet: (image, noise level) -> image."""

    def __init__(self, in_channels=3, out_channels=3, nc=8, act_mode="E"):
        super().__init__()
        self.head = nn.Conv2d(in_channels + 1, nc, 3, padding=1)
        self.act = nn.ELU()
        self.tail = nn.Conv2d(nc, out_channels, 3, padding=1)

    def forward(self, x, sigma):
        noise_level_map = torch.ones_like(x[:, :1]) * sigma
        x = torch.cat((x, noise_level_map), 1)
        return self.tail(self.act(self.head(x)))


class StudentGrad(nn.Module):
    def __init__(self, denoiser):
        super().__init__()
        self.model = denoiser

    def forward(self, x, sigma):
        return self.model(x, sigma)


class GSPnP(nn.Module):
    """Gradient Step module to use a denoiser architecture as a Gradient Step Denoiser."""

    def __init__(self, denoiser, alpha=1.0, train=False):
        super().__init__()
        self.student_grad = StudentGrad(denoiser)
        self.alpha = alpha
        self.train = train

    def potential(self, x, sigma):
        N = self.student_grad(x, sigma)
        return 0.5 * self.alpha * torch.norm((x - N).view(x.shape[0], -1), p=2, dim=-1) ** 2

    def potential_grad(self, x, sigma):
        torch.set_grad_enabled(True)
        x = x.float()
        x = x.requires_grad_()
        N = self.student_grad(x, sigma)
        JN = torch.autograd.grad(
            N, x, grad_outputs=x - N, create_graph=True, only_inputs=True
        )[0]
        if not self.train:
            torch.set_grad_enabled(False)  # <- no_grad
        Dg = x - N - JN
        return self.alpha * Dg

    def forward(self, x, sigma):
        Dg = self.potential_grad(x, sigma)
        x_hat = x - Dg
        return x_hat


def GSDRUNet(alpha=1.0, in_channels=3, out_channels=3, nc=8, act_mode="E", train=False):
    denoiser = DRUNet(in_channels=in_channels, out_channels=out_channels, nc=nc, act_mode=act_mode)
    return GSPnP(denoiser, alpha=alpha, train=train)


x = torch.tensor(12.0, requires_grad=True)
y = x ** 2 - 2
print("before denoiser call, y.requires_grad:", y.requires_grad)

img = torch.rand((1, 3, 16, 16))
model = GSDRUNet(in_channels=3, out_channels=3)
out = model(img, 0.1)

x = torch.tensor(12.0, requires_grad=True)
y = x ** 2 - 2
print("after denoiser call, y.requires_grad:", y.requires_grad)
y.backward()
print("x.grad:", x.grad)
