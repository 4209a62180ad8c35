"""BYOL in the Adaptive Soft Contrastive Learning code (MrChenFeng/Adaptive-Soft-Contrastive-Learning_ICPR2022#2):
"when I set the model to byol ... an error is reported 'RuntimeError: grad can be implicitly created only for scalar
outputs'"; the BYOL loss 2 - 2 cos(p, z) is computed per sample and the symmetric sum loss_one + loss_two is returned
without reducing it, so backward() is called on a vector ("Is it necessary to sum?"; the fix takes .mean())."""
import copy

import torch
import torch.nn.functional as F
from torch import nn


def loss_fn(x, y):
    x = F.normalize(x, dim=-1, p=2)
    y = F.normalize(y, dim=-1, p=2)
    return 2 - 2 * (x * y).sum(dim=-1)


class BYOL(nn.Module):
    def __init__(self, dim=32, proj=16, beta=0.99):
        super().__init__()
        self.online_encoder = nn.Sequential(nn.Linear(dim, 64), nn.ReLU(), nn.Linear(64, proj))
        self.online_predictor = nn.Sequential(nn.Linear(proj, 64), nn.ReLU(), nn.Linear(64, proj))
        self.target_encoder = copy.deepcopy(self.online_encoder).requires_grad_(False)
        self.beta = beta

    @torch.no_grad()
    def update_moving_average(self):
        for t, o in zip(self.target_encoder.parameters(), self.online_encoder.parameters()):
            t.mul_(self.beta).add_(o, alpha=1 - self.beta)

    def forward(self, image_one, image_two):
        online_pred_one = self.online_predictor(self.online_encoder(image_one))
        online_pred_two = self.online_predictor(self.online_encoder(image_two))
        with torch.no_grad():
            target_proj_one = self.target_encoder(image_one)
            target_proj_two = self.target_encoder(image_two)
        loss_one = loss_fn(online_pred_one, target_proj_two.detach())
        loss_two = loss_fn(online_pred_two, target_proj_one.detach())
        loss = loss_one + loss_two  # <- autograd_error
        return loss


torch.manual_seed(0)
learner = BYOL()
opt = torch.optim.Adam([*learner.online_encoder.parameters(), *learner.online_predictor.parameters()], lr=3e-4)
images = torch.randn(16, 32)
for step in range(3):
    loss = learner(images + 0.1 * torch.randn_like(images), images + 0.1 * torch.randn_like(images))
    opt.zero_grad()
    loss.backward()
    opt.step()
    learner.update_moving_average()
    print(f"step {step}: loss {loss.item():.4f}")
