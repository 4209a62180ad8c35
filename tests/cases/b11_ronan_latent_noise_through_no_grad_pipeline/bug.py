"""Optimising the input noise of a frozen Stable Diffusion pipeline (ZhentingWang/RONAN#3): the user makes the initial
latents an nn.Parameter in an Adam optimizer, renders `image = model('dog', latents=cur_noise, output_type='pt')`
and takes an MSE loss, but `print(loss.grad_fn)  # None` and backward fails: the pipeline's __call__ is decorated
with @torch.no_grad() (the repository uses its own `latent2output` that runs the same denoising with gradients)."""
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
    image = model('dog', latents=cur_noise, output_type='pt')  # <- no_grad
    loss = criterion(image, torch.zeros_like(image))
    print(f"step {step}: loss {loss.item():.4f}, grad_fn {loss.grad_fn}")
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
