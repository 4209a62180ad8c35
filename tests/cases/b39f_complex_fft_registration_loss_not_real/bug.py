# Image registration through a k-space loss: a complex phantom is warped with
# grid_sample, both images go through an (orthonormal) FFT, and the loss is the
# squared mean of the complex k-space difference. That loss is itself complex,
# so loss.backward() refuses to start.
import numpy as np
import torch
import torch.nn.functional as F

torch.manual_seed(0)
my_device = "cpu"
x_dim = y_dim = 32


def my_fft(img):
    # stands in for sp.to_pytorch_function(sp.linop.FFT((x_dim, y_dim), axes=(-1, -2)))
    img = torch.fft.ifftshift(img, dim=(-2, -1))
    out = torch.fft.fft2(img, norm="ortho")
    return torch.fft.fftshift(out, dim=(-2, -1))


base = np.random.RandomState(0).rand(x_dim, y_dim)
phantom = torch.tensor(base, device=my_device, dtype=torch.cfloat, requires_grad=True)
optimizer = torch.optim.Adam([phantom], lr=1e-2)

phantom_fft = my_fft(phantom)

vectors = [torch.arange(0, s, device=my_device) for s in (x_dim, y_dim)]
grids = torch.meshgrid(*vectors, indexing="ij")
orig_grid = torch.stack(grids)[None, :, :, :]
orig_grid = orig_grid.type(dtype=torch.float32)
for i in range(len((x_dim, y_dim))):
    orig_grid[:, i, ...] = 2 * (orig_grid[:, i, ...] / ((x_dim, y_dim)[i] - 1) - 0.5)
orig_grid = orig_grid.permute(0, 2, 3, 1)
orig_grid = orig_grid[..., [1, 0]]

warped_phantom = F.grid_sample(phantom[None, None, :, :].real, orig_grid)
warped_phantom_fft = my_fft(warped_phantom[0, 0, :, :])

loss = torch.mean(warped_phantom_fft - phantom_fft) ** 2  # <- autograd_error
print("loss:", loss)

optimizer.zero_grad()
loss.backward()
optimizer.step()
print("phantom.grad is None:", phantom.grad is None)
