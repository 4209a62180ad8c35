"""diffusers' train_text_to_image.py step in miniature: a tiny AutoencoderKL and CLIPTextModel built
from configs and frozen with requires_grad_(False), a UNet2DConditionModel trained on the latents
(vae.encode(...).latent_dist.sample() * scaling_factor), DDPMScheduler noise, and the text
embeddings as encoder_hidden_states."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch
import torch.nn.functional as F
from diffusers import AutoencoderKL, DDPMScheduler, UNet2DConditionModel
from transformers import CLIPTextConfig, CLIPTextModel


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    vae = AutoencoderKL(in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(8,),
                        down_block_types=("DownEncoderBlock2D",), up_block_types=("UpDecoderBlock2D",),
                        layers_per_block=1, norm_num_groups=4, sample_size=16)
    text_encoder = CLIPTextModel(CLIPTextConfig(vocab_size=64, hidden_size=16, intermediate_size=32,
                                                num_hidden_layers=1, num_attention_heads=2, max_position_embeddings=8,
                                                bos_token_id=0, eos_token_id=2, pad_token_id=1))
    unet = UNet2DConditionModel(sample_size=16, in_channels=4, out_channels=4, layers_per_block=1,
                                block_out_channels=(8, 16), down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                                up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=16,
                                norm_num_groups=4, attention_head_dim=4)
    noise_scheduler = DDPMScheduler(num_train_timesteps=50)
    vae.requires_grad_(False)
    text_encoder.requires_grad_(False)
    unet.train()
    optimizer = torch.optim.AdamW(unet.parameters(), lr=1e-4)
    for step in range(2):
        pixel_values = torch.rand(2, 3, 16, 16) * 2 - 1
        input_ids = torch.randint(0, 64, (2, 8))
        latents = vae.encode(pixel_values).latent_dist.sample() * vae.config.scaling_factor
        noise = torch.randn_like(latents)
        timesteps = torch.randint(0, noise_scheduler.config.num_train_timesteps, (latents.shape[0],)).long()
        noisy_latents = noise_scheduler.add_noise(latents, noise, timesteps)
        encoder_hidden_states = text_encoder(input_ids, return_dict=False)[0]
        model_pred = unet(noisy_latents, timesteps, encoder_hidden_states, return_dict=False)[0]
        loss = F.mse_loss(model_pred.float(), noise.float(), reduction="mean")
        loss.backward()
        torch.nn.utils.clip_grad_norm_(unet.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
        print(f"step {step} loss {loss.item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(unet.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
