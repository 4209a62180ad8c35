"""Optimizing the input noise of a frozen Stable Diffusion pipeline (ZhentingWang/RONAN#3,
https://github.com/ZhentingWang/RONAN/issues/3; same code in #2): the user freezes unet and vae, makes the initial
latents an nn.Parameter, calls the diffusers pipeline `model('dog', latents=cur_noise, output_type='pt')` and
takes an MSE loss on the image; print(loss.grad_fn) shows None and loss.backward() raises "element 0 of tensors
does not require grad and does not have a grad_fn".
Why: diffusers decorates DiffusionPipeline.__call__ with @torch.no_grad() (pipelines are for inference), so the
whole denoising loop and the VAE decode run without recording a graph; cur_noise never reaches the loss.
Fix: call the pipeline's undecorated body (the RONAN authors wrote their own `latent2output`; diffusers'
maintainers suggest `__call__.__wrapped__`), so the loop runs with gradients enabled."""
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import nn


class StableDiffusionPipeline(nn.Module):  # diffusers stand-in: unet + vae + scheduler loop, inference only
    def __init__(self):
        super().__init__()
        self.text_encoder = nn.Embedding(10, 8)
        self.unet = nn.Conv2d(4 + 8, 4, 3, padding=1)
        self.vae = nn.ConvTranspose2d(4, 3, 2, stride=2)
        self.unet.config = SimpleNamespace(sample_size=8, in_channels=4)
        self.vae_scale_factor = 2
        self.timesteps = torch.linspace(1.0, 0.1, 4)

    @torch.no_grad()
    def __call__(self, prompt, latents, output_type="pil", generator=None):
        ids = torch.tensor([sum(map(ord, prompt)) % 10])
        cond = self.text_encoder(ids)[:, :, None, None].expand(-1, -1, *latents.shape[-2:])
        for t in self.timesteps:
            noise_pred = self.unet(torch.cat([latents, cond], dim=1))
            latents = latents - 0.25 * t * noise_pred  # scheduler.step(noise_pred, t, latents).prev_sample
        image = (self.vae(latents / 0.18215) / 2 + 0.5).clamp(0, 1)
        return SimpleNamespace(images=image)


torch.manual_seed(0)
model = StableDiffusionPipeline()
model.unet.eval()
model.vae.eval()

for param in model.unet.parameters():
    param.requires_grad = False

for param in model.vae.parameters():
    param.requires_grad = False

height = model.unet.config.sample_size * model.vae_scale_factor
width = model.unet.config.sample_size * model.vae_scale_factor
cur_noise = torch.randn([1, model.unet.config.in_channels, height // model.vae_scale_factor, width // model.vae_scale_factor])

cur_noise = nn.Parameter(cur_noise, requires_grad=True)
optimizer = torch.optim.Adam([cur_noise], lr=0.01)

criterion = torch.nn.MSELoss()

for it in range(3):
    image = model('dog', latents=cur_noise, output_type='pt', generator=torch.manual_seed(0)).images[0]  # <- no_grad
    image_ = torch.unsqueeze(image, dim=0)

    image_224 = F.interpolate(image_, size=(24, 24), mode='bilinear', align_corners=False)
    labels = torch.zeros_like(image_224)

    loss = criterion(image_224, labels)
    print(loss.grad_fn)

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"iter {it} loss={loss.item():.5f}")
