"""SimAC's PGD attack on a diffusion UNet (somuchtome/SimAC#3): the feature-space term is added as
`target_loss.detach().item()`, a Python number, so the perturbation follows the denoising loss only."""
import torch
import torch.nn.functional as F
from torch import nn


class ResBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
        self.out_layers_features = None

    def forward(self, x):
        hidden_states = self.conv2(F.silu(self.conv1(x)))
        self.out_layers_features = hidden_states
        return x + hidden_states


class TinyUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv_in = nn.Conv2d(3, 8, 3, padding=1)
        self.down_block = ResBlock(8)
        self.up_block = ResBlock(8)
        self.conv_out = nn.Conv2d(8, 3, 3, padding=1)

    def forward(self, x, timesteps):
        h = self.conv_in(x) + timesteps.view(-1, 1, 1, 1).float() / 1000
        return self.conv_out(self.up_block(self.down_block(h)))


def add_noise(latents, noise, timesteps):
    alpha = (1 - timesteps.float() / 1000).view(-1, 1, 1, 1)
    return alpha.sqrt() * latents + (1 - alpha).sqrt() * noise


torch.manual_seed(0)
unet = TinyUNet()
original_images = torch.rand(2, 3, 8, 8) * 2 - 1
pgd_alpha, pgd_eps = 0.005, 16 / 255
perturbed_images = (original_images + torch.empty_like(original_images).uniform_(-pgd_eps, pgd_eps)).detach()
for step in range(4):
    perturbed_images.requires_grad = True
    noise = torch.randn_like(perturbed_images)
    timesteps = torch.randint(0, 1000, (2,))
    model_pred = unet(add_noise(perturbed_images, noise, timesteps), timesteps)
    noise_features = unet.up_block.out_layers_features
    with torch.no_grad():
        unet(add_noise(original_images, noise, timesteps), timesteps)
        clean_features = unet.up_block.out_layers_features
    target_loss = F.mse_loss(noise_features.float(), clean_features.float(), reduction="mean")
    unet.zero_grad()
    loss = F.mse_loss(model_pred.float(), noise.float(), reduction="mean")
    loss = loss + target_loss.detach().item()  # <- cut_term
    loss.backward()
    adv_images = perturbed_images + pgd_alpha * perturbed_images.grad.sign()
    eta = torch.clamp(adv_images - original_images, min=-pgd_eps, max=+pgd_eps)
    perturbed_images = torch.clamp(original_images + eta, min=-1, max=+1).detach_()
    print(f"PGD loss - step {step}, loss: {loss.detach().item():.4f}, target_loss : {target_loss.detach().item():.3e}")
