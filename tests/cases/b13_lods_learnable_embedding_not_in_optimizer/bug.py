"""LODS on GaussianDreamer (yangxiaofeng/LODS#2): the diffusion prior's learnable text embedding is trained with the
Gaussians through the guidance losses, but configure_optimizers() returns the optimizer that
GaussianModel.training_setup() built from the Gaussians' own parameter groups, so the embedding gets a gradient at
every step and never changes (the fix adds a param group for self.guidance.parameters() to that optimizer)."""
import torch
import torch.nn.functional as F
from torch import nn


class GaussianModel(nn.Module):
    def __init__(self, n=32):
        super().__init__()
        self._xyz = nn.Parameter(torch.rand(n, 2) * 2 - 1)
        self._features_dc = nn.Parameter(torch.rand(n, 3))
        self._opacity = nn.Parameter(torch.zeros(n, 1))

    def training_setup(self):
        l = [{"params": [self._xyz], "lr": 1e-3}, {"params": [self._features_dc], "lr": 1e-2},  # <- optimizer
             {"params": [self._opacity], "lr": 5e-2}]
        self.optimizer = torch.optim.Adam(l, lr=0.0, eps=1e-15)

    def render(self, size=16):
        grid = torch.stack(torch.meshgrid(torch.linspace(-1, 1, size), torch.linspace(-1, 1, size), indexing="ij"), -1)
        w = torch.exp(-((grid.view(-1, 1, 2) - self._xyz) ** 2).sum(-1) * 20) * torch.sigmoid(self._opacity).T
        return (w @ self._features_dc).T.reshape(1, 3, size, size)


class LODSGuidance(nn.Module):
    def __init__(self):
        super().__init__()
        self.unet = nn.Conv2d(3, 3, 3, padding=1).requires_grad_(False)
        self.learnable_embedding = nn.Parameter(torch.zeros(1, 3, 1, 1))

    def forward(self, images):
        noise = torch.randn_like(images)
        noisy = 0.8 * images + 0.6 * noise
        noise_pred = self.unet(noisy) + self.learnable_embedding
        return {"loss_sds": F.mse_loss(noise_pred, noise), "loss_embedding": noise_pred.pow(2).mean() * 0.01}


class GaussianDreamer(nn.Module):
    def __init__(self):
        super().__init__()
        self.gaussian, self.guidance = GaussianModel(), LODSGuidance()

    def configure_optimizers(self):
        self.gaussian.training_setup()
        return {"optimizer": self.gaussian.optimizer}

    def training_step(self):
        out = self.guidance(self.gaussian.render())
        return out["loss_sds"] + out["loss_embedding"]


torch.manual_seed(0)
system = GaussianDreamer()
optimizer = system.configure_optimizers()["optimizer"]
emb_before = system.guidance.learnable_embedding.detach().clone()
for step in range(3):
    optimizer.zero_grad()
    system.training_step().backward()
    optimizer.step()
emb = system.guidance.learnable_embedding
print(f"embedding grad norm {emb.grad.norm():.4f}, changed: {not torch.equal(emb_before, emb)}")
