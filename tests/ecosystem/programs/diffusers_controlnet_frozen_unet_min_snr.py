"""diffusers ControlNet training in miniature, following ``examples/controlnet/train_controlnet.py``
(https://huggingface.co/docs/diffusers/training/controlnet) with the Min-SNR loss weighting of
``examples/text_to_image/train_text_to_image.py`` (``--snr_gamma``, ``diffusers.training_utils.compute_snr``).

Patterns kept:
- tiny ``AutoencoderKL``, ``CLIPTextModel`` and ``UNet2DConditionModel`` built from configs (random init);
  all three frozen with ``requires_grad_(False)`` and still called *without* ``no_grad`` (as the script
  does); the VAE latents and text states therefore carry no graph;
- ``ControlNetModel.from_unet(unet)`` copies the UNet encoder weights; the controlnet is the only trained
  model; its ``controlnet_down_blocks`` / ``controlnet_mid_block`` and the last conv of the conditioning
  embedding are *zero-initialised*: in the first step only those zero convolutions get a non-zero gradient
  and the controlnet body gets an exactly-zero one, the body starts learning from step 2 and the
  conditioning-embedding stem from step 3 (so the run takes 4 steps);
- the frozen UNet receives the controlnet residuals via ``down_block_additional_residuals`` /
  ``mid_block_additional_residual``: the gradient reaches the controlnet only through the frozen UNet;
- Min-SNR-gamma: per-sample MSE weighted by ``min(snr, gamma) / snr`` (epsilon prediction), ``.detach()``-free
  because the weights come from timesteps only; ``clip_grad_norm_`` on the controlnet parameters.
"""
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import torch
import torch.nn.functional as F
from diffusers import AutoencoderKL, ControlNetModel, DDPMScheduler, UNet2DConditionModel
from diffusers.training_utils import compute_snr
from transformers import CLIPTextConfig, CLIPTextModel


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    vae = AutoencoderKL(
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
        block_out_channels=(8, 8),
        layers_per_block=1,
        latent_channels=4,
        norm_num_groups=4,
        sample_size=16,
    )
    text_encoder = CLIPTextModel(
        CLIPTextConfig(
            vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
            num_attention_heads=2, max_position_embeddings=8,
            bos_token_id=0, eos_token_id=2, pad_token_id=1,
        )
    )
    unet = UNet2DConditionModel(
        sample_size=8,
        in_channels=4,
        out_channels=4,
        layers_per_block=1,
        block_out_channels=(8, 16),
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=16,
        attention_head_dim=2,
        norm_num_groups=4,
    )
    noise_scheduler = DDPMScheduler(num_train_timesteps=100)
    controlnet = ControlNetModel.from_unet(unet, conditioning_embedding_out_channels=(4, 8))

    vae.requires_grad_(False)
    unet.requires_grad_(False)
    text_encoder.requires_grad_(False)
    controlnet.train()

    optimizer = torch.optim.AdamW(controlnet.parameters(), lr=1e-3)
    snr_gamma = 5.0
    for step in range(4):
        pixel_values = torch.randn(2, 3, 16, 16)
        conditioning_pixel_values = torch.rand(2, 3, 16, 16)
        input_ids = torch.randint(0, 64, (2, 8))

        latents = vae.encode(pixel_values).latent_dist.sample()
        latents = latents * vae.config.scaling_factor
        noise = torch.randn_like(latents)
        bsz = latents.shape[0]
        timesteps = torch.randint(0, noise_scheduler.config.num_train_timesteps, (bsz,)).long()
        noisy_latents = noise_scheduler.add_noise(latents, noise, timesteps)
        encoder_hidden_states = text_encoder(input_ids, return_dict=False)[0]

        down_block_res_samples, mid_block_res_sample = controlnet(
            noisy_latents,
            timesteps,
            encoder_hidden_states=encoder_hidden_states,
            controlnet_cond=conditioning_pixel_values,
            return_dict=False,
        )
        model_pred = unet(
            noisy_latents,
            timesteps,
            encoder_hidden_states=encoder_hidden_states,
            down_block_additional_residuals=list(down_block_res_samples),
            mid_block_additional_residual=mid_block_res_sample,
            return_dict=False,
        )[0]

        target = noise  # epsilon prediction
        snr = compute_snr(noise_scheduler, timesteps)
        mse_loss_weights = torch.stack([snr, snr_gamma * torch.ones_like(timesteps)], dim=1).min(dim=1)[0] / snr
        loss = F.mse_loss(model_pred.float(), target.float(), reduction="none")
        loss = loss.mean(dim=list(range(1, len(loss.shape)))) * mse_loss_weights
        loss = loss.mean()

        loss.backward()
        torch.nn.utils.clip_grad_norm_(controlnet.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        print(f"step {step} loss {loss.item():.6f}")

    if os.environ.get("REALWORLD_STATE"):
        torch.save(controlnet.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
