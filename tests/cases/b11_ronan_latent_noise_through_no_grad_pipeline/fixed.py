"""The fixed twin: the noise is rendered through latent2output, which runs with gradients (ZhentingWang/RONAN#3)."""
import torch
from torch import nn


class Text2ImagePipeline:
    def __init__(self):
        self.unet = nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), nn.SiLU(), nn.Conv2d(8, 4, 3, padding=1))
        self.vae_decoder = nn.Sequential(nn.Upsample(scale_factor=2), nn.Conv2d(4, 3, 3, padding=1), nn.Tanh())
        self.unet.requires_grad_(False)
        self.vae_decoder.requires_grad_(False)

    def latent2output(self, latents, num_inference_steps=4):
        for t in range(num_inference_steps):
            latents = latents - 0.1 * self.unet(latents)
        return (self.vae_decoder(latents) + 1) / 2

    @torch.no_grad()
    def __call__(self, prompt, latents, output_type="pt", num_inference_steps=4):
        return self.latent2output(latents, num_inference_steps)


torch.manual_seed(0)
model = Text2ImagePipeline()
cur_noise = nn.Parameter(torch.randn(1, 4, 8, 8), requires_grad=True)
optimizer = torch.optim.Adam([cur_noise], lr=0.05)
criterion = nn.MSELoss()
for step in range(3):
    image = model.latent2output(cur_noise)
    loss = criterion(image, torch.zeros_like(image))
    print(f"step {step}: loss {loss.item():.4f}, grad_fn {loss.grad_fn}")
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
