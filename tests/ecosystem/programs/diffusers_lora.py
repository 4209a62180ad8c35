"""diffusers' current LoRA training recipe (train_text_to_image_lora.py) in miniature: the UNet frozen with
requires_grad_(False), unet.add_adapter(LoraConfig(...)) from peft, the optimizer over the parameters that
require grad (filter(lambda p: p.requires_grad, ...)), cast_training_params, and the adapter weights read
back with get_peft_model_state_dict."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
import torch.nn.functional as F
from diffusers import DDPMScheduler, UNet2DConditionModel
from diffusers.training_utils import cast_training_params
from peft import LoraConfig
from peft.utils import get_peft_model_state_dict


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    unet = UNet2DConditionModel(sample_size=8, in_channels=4, out_channels=4, layers_per_block=1,
                                block_out_channels=(8, 16), down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                                up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=16,
                                norm_num_groups=4, attention_head_dim=4)
    noise_scheduler = DDPMScheduler(num_train_timesteps=50)
    unet.requires_grad_(False)
    unet_lora_config = LoraConfig(r=4, lora_alpha=4, init_lora_weights="gaussian",
                                  target_modules=["to_k", "to_q", "to_v", "to_out.0"])
    unet.add_adapter(unet_lora_config)
    cast_training_params(unet, dtype=torch.float32)
    lora_layers = list(filter(lambda p: p.requires_grad, unet.parameters()))
    optimizer = torch.optim.AdamW(lora_layers, lr=1e-3)
    print(f"lora tensors {len(lora_layers)}")
    unet.train()
    for step in range(3):
        latents = torch.randn(2, 4, 8, 8)
        encoder_hidden_states = torch.randn(2, 6, 16)
        noise = torch.randn_like(latents)
        timesteps = torch.randint(0, noise_scheduler.config.num_train_timesteps, (2,)).long()
        noisy_latents = noise_scheduler.add_noise(latents, noise, timesteps)
        model_pred = unet(noisy_latents, timesteps, encoder_hidden_states, return_dict=False)[0]
        loss = F.mse_loss(model_pred.float(), noise.float(), reduction="mean")
        loss.backward()
        torch.nn.utils.clip_grad_norm_(lora_layers, 1.0)
        optimizer.step()
        optimizer.zero_grad()
        print(f"step {step} loss {loss.item():.6f}")
    state = get_peft_model_state_dict(unet)
    print(f"adapter tensors saved {len(state)}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(unet.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
