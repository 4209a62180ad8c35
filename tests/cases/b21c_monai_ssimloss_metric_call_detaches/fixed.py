"""MONAI (Project-MONAI/MONAI#5668, https://github.com/Project-MONAI/MONAI/issues/5668): SSIMLoss result does
not have gradient. The repro makes y require grad and prints SSIMLoss(spatial_dims=2)(x, y, data_range).requires_grad:
False; loss.backward() then raises "element 0 of tensors does not require grad and does not have a grad_fn".
Why (PR #5686): after #5550 SSIMLoss computed its value by calling the SSIMMetric object, and
IterationMetric.__call__ runs .detach() on every input before _compute_tensor (monai/metrics/metric.py#L70),
so the loss is built from detached copies of x and y.
Fix (PR #5686): call SSIMMetric(...)._compute_tensor(x, y) explicitly in SSIMLoss.forward, skipping the detach."""
import torch
import torch.nn.functional as F
from torch.nn.modules.loss import _Loss


# --- monai.metrics.metric.IterationMetric / monai.metrics.regression.SSIMMetric (Dec 2022), cut down ---
class IterationMetric:
    def __call__(self, y_pred, y=None):
        if isinstance(y_pred, torch.Tensor):
            y_ = y.detach() if isinstance(y, torch.Tensor) else None
            return self._compute_tensor(y_pred.detach(), y_)
        raise ValueError("y_pred or y must be a list/tuple of `channel-first` Tensors or a `batch-first` Tensor.")


class SSIMMetric(IterationMetric):
    def __init__(self, data_range, win_size=7, k1=0.01, k2=0.03, spatial_dims=2):
        self.data_range = data_range
        self.win_size = win_size
        self.k1, self.k2 = k1, k2
        self.spatial_dims = spatial_dims
        self.w = torch.ones([1, 1] + [win_size for _ in range(spatial_dims)]) / win_size**spatial_dims
        self.cov_norm = (win_size**2) / (win_size**2 - 1)

    def _compute_tensor(self, x, y):
        data_range = self.data_range[(None,) * (self.spatial_dims + 2)]
        conv = getattr(F, f"conv{self.spatial_dims}d")
        c1 = (self.k1 * data_range) ** 2  # stability constant for luminance
        c2 = (self.k2 * data_range) ** 2  # stability constant for contrast
        ux, uy = conv(x, self.w), conv(y, self.w)  # mu_x, mu_y
        uxx, uyy, uxy = conv(x * x, self.w), conv(y * y, self.w), conv(x * y, self.w)
        vx = self.cov_norm * (uxx - ux * ux)  # sigma_x
        vy = self.cov_norm * (uyy - uy * uy)  # sigma_y
        vxy = self.cov_norm * (uxy - ux * uy)  # sigma_xy
        numerator = (2 * ux * uy + c1) * (2 * vxy + c2)
        denom = (ux**2 + uy**2 + c1) * (vx + vy + c2)
        return (numerator / denom).mean()


# --- monai.losses.ssim_loss.SSIMLoss after #5550 ---
class SSIMLoss(_Loss):
    def __init__(self, win_size: int = 7, k1: float = 0.01, k2: float = 0.03, spatial_dims: int = 2):
        super().__init__()
        self.win_size = win_size
        self.k1, self.k2 = k1, k2
        self.spatial_dims = spatial_dims

    def forward(self, x, y, data_range):
        if x.shape[0] == 1:
            ssim_value = SSIMMetric(data_range, self.win_size, self.k1, self.k2, self.spatial_dims)._compute_tensor(x, y)
        else:
            raise ValueError("Batch size is not nonnegative integer value")
        loss: torch.Tensor = 1 - ssim_value.mean()
        return loss


# --- the report's repro, then the backward a training step would run ---
torch.manual_seed(0)
x = torch.ones([1, 1, 10, 10]) / 2
y = torch.rand([1, 1, 10, 10])
y.requires_grad_(True)
data_range = x.max().unsqueeze(0)
loss = SSIMLoss(spatial_dims=2)(x, y, data_range)
print(loss.requires_grad)
loss.backward()
print("y got a gradient:", y.grad is not None and bool(y.grad.abs().sum() > 0))
