"""robust_loss_pytorch's adaptive loss (jonbarron/robust_loss_pytorch#7): a regression CNN's MSE is replaced by
`AdaptiveLossFunction`, whose shape `alpha` and `scale` are latent nn.Parameters of the loss module, but the
optimizer gets only `model.parameters()`: the latents receive gradients and never change ("alpha and scale
don't change during training"). The fix gives the loss module's parameters to the optimizer too."""
import torch
import torch.nn.functional as F
from torch import nn


class AdaptiveLossFunction(nn.Module):
    def __init__(self, num_dims, alpha_lo=0.001, alpha_hi=1.999, scale_lo=1e-5, scale_init=1.0):
        super().__init__()
        self.alpha_lo, self.alpha_hi, self.scale_lo = alpha_lo, alpha_hi, scale_lo
        self.latent_alpha = nn.Parameter(torch.zeros(1, num_dims))
        self.latent_scale = nn.Parameter(torch.full((1, num_dims), scale_init))

    def alpha(self):
        return self.alpha_lo + (self.alpha_hi - self.alpha_lo) * torch.sigmoid(self.latent_alpha)

    def scale(self):
        return F.softplus(self.latent_scale) + self.scale_lo

    def lossfun(self, x):
        alpha, scale = self.alpha(), self.scale()
        b = (alpha - 2).abs()
        rho = b / alpha * (((x / scale) ** 2 / b + 1) ** (alpha / 2) - 1)
        return rho + torch.log(scale) + 0.1 * alpha  # NLL up to the log-partition term


torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 6))
criterion = AdaptiveLossFunction(6)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)  # <- optimizer
images, labels = torch.randn(16, 1, 12, 12), torch.randn(16, 6)
alpha_before, scale_before = criterion.alpha().detach().clone(), criterion.scale().detach().clone()
for step in range(5):
    output = model(images)
    loss = criterion.lossfun(output - labels).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"latent_alpha grad set: {criterion.latent_alpha.grad is not None}; "
      f"alpha changed: {not torch.equal(criterion.alpha(), alpha_before)}, "
      f"scale changed: {not torch.equal(criterion.scale(), scale_before)}")
