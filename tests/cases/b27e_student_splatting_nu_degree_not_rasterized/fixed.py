"""3D Student Splatting and Scooping issue #7 "Issue about the rasterizer and nu degree",
https://github.com/realcrane/3D-student-splatting-and-scooping/issues/7: adapting the repository to 2D
rendering, the reporter saw that the learnable degree of freedom `nu_degree` "stays the same throughout the
training process", its gradient "consistently None or 0" although requires_grad is True and _opacity and the
other parameters learn. Their own diagnosis: the rasterizer's forward takes `nu_degree` as an argument, but it
is not passed on to the rasterization call, so the Student's t kernel is evaluated with a fixed degree and the
loss never depends on the parameter. Fix: pass nu_degree through to the rasterization function.
The CUDA rasterizer is a 2D Student's t splat in torch; the model and loop keep the repository's names."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)


def rasterize_students(means2D, colors, opacities, scales, nu, raster_settings):
    H = W = raster_settings["image_size"]
    lin = torch.linspace(-1, 1, H)
    ys, xs = torch.meshgrid(lin, lin, indexing="ij")
    pix = torch.stack((xs, ys), -1).reshape(-1, 1, 2)
    d2 = (((pix - means2D[None]) / scales[None]) ** 2).sum(-1)          # (H*W, N)
    kernel = (1 + d2 / nu[None, :, 0]) ** (-(nu[None, :, 0] + 2) / 2)   # Student's t
    alpha = (opacities[None, :, 0] * kernel).clamp(max=0.99)
    return ((alpha[..., None] * colors[None]).sum(1) / (alpha.sum(1, keepdim=True) + 1e-6)).reshape(H, W, 3)


class StudentRasterizer(nn.Module):
    def __init__(self, raster_settings):
        super().__init__()
        self.raster_settings = raster_settings

    def forward(self, means2D, opacities, nu_degree, colors_precomp, scales):
        raster_settings = self.raster_settings
        default_nu = torch.full_like(opacities, raster_settings["nu_default"])
        return rasterize_students(means2D, colors_precomp, opacities, scales, nu_degree, raster_settings)  # <- unused_parameter


class StudentModel(nn.Module):
    def __init__(self, n=24):
        super().__init__()
        self._xyz = nn.Parameter(torch.rand(n, 2) * 2 - 1)
        self._features = nn.Parameter(torch.rand(n, 3))
        self._opacity = nn.Parameter(torch.zeros(n, 1))
        self._scaling = nn.Parameter(torch.full((n, 1), -2.0))
        self._nu_degree = nn.Parameter(torch.zeros(n, 1))

    @property
    def get_nu_degree(self):
        return 1 + 9 * torch.sigmoid(self._nu_degree)


torch.manual_seed(0)
settings = {"image_size": 16, "nu_default": 5.5}
rasterizer = StudentRasterizer(settings)
target = torch.rand(16, 16, 3)
gaussians = StudentModel()
optimizer = torch.optim.Adam([
    {"params": [gaussians._xyz], "lr": 0.01, "name": "xyz"},
    {"params": [gaussians._features], "lr": 0.01, "name": "f_dc"},
    {"params": [gaussians._opacity], "lr": 0.05, "name": "opacity"},
    {"params": [gaussians._scaling], "lr": 0.005, "name": "scaling"},
    {"params": [gaussians._nu_degree], "lr": 0.01, "name": "nu_degree"},
])
nu_start = gaussians._nu_degree.detach().clone()
for iteration in range(10):
    image = rasterizer(means2D=torch.tanh(gaussians._xyz), opacities=torch.sigmoid(gaussians._opacity),
                       nu_degree=gaussians.get_nu_degree, colors_precomp=gaussians._features,
                       scales=torch.exp(gaussians._scaling))
    loss = F.l1_loss(image, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

print("loss:", round(loss.item(), 5))
print("_opacity.grad is None:", gaussians._opacity.grad is None)
print("_nu_degree.grad is None:", gaussians._nu_degree.grad is None)
print("nu_degree changed:", not torch.equal(nu_start, gaussians._nu_degree.detach()))
