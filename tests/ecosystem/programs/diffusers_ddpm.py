"""diffusers' train_unconditional.py step in miniature: a tiny UNet2DModel from a config, DDPMScheduler
add_noise at random timesteps, MSE on the predicted noise, get_cosine_schedule_with_warmup, EMAModel
from diffusers.training_utils stepped after each update, and a short sampling loop under no_grad
with the EMA weights copied into the UNet."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
import torch.nn.functional as F
from diffusers import DDPMScheduler, UNet2DModel
from diffusers.optimization import get_cosine_schedule_with_warmup
from diffusers.training_utils import EMAModel


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = UNet2DModel(sample_size=8, in_channels=1, out_channels=1, layers_per_block=1,
                        block_out_channels=(8, 16), down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                        up_block_types=("AttnUpBlock2D", "UpBlock2D"), norm_num_groups=4, attention_head_dim=8)
    noise_scheduler = DDPMScheduler(num_train_timesteps=50)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2)
    lr_scheduler = get_cosine_schedule_with_warmup(optimizer, num_warmup_steps=1, num_training_steps=3)
    ema_model = EMAModel(model.parameters(), decay=0.99, model_cls=UNet2DModel, model_config=model.config)
    model.train()
    for step in range(3):
        clean_images = torch.randn(2, 1, 8, 8)
        noise = torch.randn(clean_images.shape)
        timesteps = torch.randint(0, noise_scheduler.config.num_train_timesteps, (2,)).long()
        noisy_images = noise_scheduler.add_noise(clean_images, noise, timesteps)
        noise_pred = model(noisy_images, timesteps, return_dict=False)[0]
        loss = F.mse_loss(noise_pred, noise)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        lr_scheduler.step()
        optimizer.zero_grad()
        ema_model.step(model.parameters())
        print(f"step {step} loss {loss.item():.6f}")
    ema_model.store(model.parameters())
    ema_model.copy_to(model.parameters())
    model.eval()
    noise_scheduler.set_timesteps(3)
    image = torch.randn(1, 1, 8, 8)
    with torch.no_grad():
        for t in noise_scheduler.timesteps:
            model_output = model(image, t).sample
            image = noise_scheduler.step(model_output, t, image, generator=torch.Generator().manual_seed(0)).prev_sample
    ema_model.restore(model.parameters())
    print(f"sample mean {image.mean().item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
