"""kohya-ss/sd-scripts PR #1000 "Fix multi-gpu SDXL training" (fixes #994, #997),
https://github.com/kohya-ss/sd-scripts/pull/1000: full SDXL fine-tuning with `--train_text_encoder` marks every
parameter of both text encoders trainable and gives them to the optimizer, but SDXL conditions the U-Net on the
PENULTIMATE hidden state of text encoder 1 (hidden_states[11] of CLIP-L) and on text encoder 2's penultimate state and
pooled output. The last encoder layer of text encoder 1 and its final_layer_norm still run, but their output reaches no
loss: their .grad stays None at every step (under DDP this raised "Expected to have finished reduction ... parameters
that were not used in producing loss"; on one GPU they silently never train, as the PR author checked).
Fix (the PR): freeze text encoder 1's last layer and final layer norm, since they do not take part in the loss.
Reduced: tiny random CLIPTextModel / CLIPTextModelWithProjection (2 layers, so hidden_states[-2] is the penultimate
state), a tiny diffusers UNet2DConditionModel with a projected class embedding standing in for kohya's own SDXL U-Net
(its label_emb takes the pooled + size "vector" embedding), random latents standing in for cached VAE latents."""
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import torch
from diffusers import DDPMScheduler, UNet2DConditionModel
from diffusers.models.embeddings import get_timestep_embedding
from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection


# --- library/train_util.py and sdxl_train_util.py, in short ------------------------------------
def get_hidden_states_sdxl(input_ids1, input_ids2, text_encoder1, text_encoder2):
    # text_encoder1
    enc_out = text_encoder1(input_ids1, output_hidden_states=True, return_dict=True)
    hidden_states1 = enc_out["hidden_states"][-2]  # hidden_states[11] of the 12-layer CLIP-L
    # text_encoder2
    enc_out = text_encoder2(input_ids2, output_hidden_states=True, return_dict=True)
    hidden_states2 = enc_out["hidden_states"][-2]  # penuultimate layer
    pool2 = enc_out["text_embeds"]
    return hidden_states1, hidden_states2, pool2


def get_size_embeddings(orig_size, crop_size, target_size, dim=4):
    sizes = torch.cat([orig_size, crop_size, target_size], dim=1)  # (b, 6)
    return get_timestep_embedding(sizes.flatten(), dim).reshape(sizes.shape[0], -1)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    te_cfg = dict(vocab_size=64, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
                  max_position_embeddings=8, bos_token_id=0, eos_token_id=2, pad_token_id=1)
    text_encoder1 = CLIPTextModel(CLIPTextConfig(hidden_size=16, **te_cfg))
    text_encoder2 = CLIPTextModelWithProjection(CLIPTextConfig(hidden_size=16, projection_dim=8, **te_cfg))
    unet = UNet2DConditionModel(
        sample_size=8, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(8, 16),
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=32, norm_num_groups=4, attention_head_dim=2, class_embed_type="projection",
        projection_class_embeddings_input_dim=8 + 6 * 4)
    noise_scheduler = DDPMScheduler(num_train_timesteps=100)
    train_text_encoder = True

    # prepare the models for training
    training_models = []
    unet.requires_grad_(True)
    training_models.append(unet)
    if train_text_encoder:
        text_encoder1.requires_grad_(True)  # <- unused_parameter
        text_encoder2.requires_grad_(True)
        text_encoder1.train()
        text_encoder2.train()
        training_models.append(text_encoder1)
        training_models.append(text_encoder2)

    params_to_optimize = []
    for m in training_models:
        params_to_optimize.extend(m.parameters())
    optimizer = torch.optim.AdamW(params_to_optimize, lr=1e-3)

    last_layer = text_encoder1.encoder.layers[-1].mlp.fc2.weight
    before = last_layer.detach().clone()
    unet.train()
    for step in range(1, 4):
        latents = torch.randn(2, 4, 8, 8)  # cached vae latents * scale
        input_ids1 = torch.randint(0, 64, (2, 8))
        input_ids2 = torch.randint(0, 64, (2, 8))
        with torch.set_grad_enabled(train_text_encoder):
            encoder_hidden_states1, encoder_hidden_states2, pool2 = get_hidden_states_sdxl(
                input_ids1, input_ids2, text_encoder1, text_encoder2)

        # get size embeddings
        orig_size = torch.tensor([[8.0, 8.0]]).repeat(2, 1)
        crop_size = torch.zeros(2, 2)
        target_size = torch.tensor([[8.0, 8.0]]).repeat(2, 1)
        embs = get_size_embeddings(orig_size, crop_size, target_size)

        # concat embeddings
        vector_embedding = torch.cat([pool2, embs], dim=1)
        text_embedding = torch.cat([encoder_hidden_states1, encoder_hidden_states2], dim=2)

        noise = torch.randn_like(latents)
        timesteps = torch.randint(0, noise_scheduler.config.num_train_timesteps, (2,)).long()
        noisy_latents = noise_scheduler.add_noise(latents, noise, timesteps)
        noise_pred = unet(noisy_latents, timesteps, text_embedding, class_labels=vector_embedding).sample

        target = noise
        loss = torch.nn.functional.mse_loss(noise_pred.float(), target.float(), reduction="mean")
        loss.backward()
        grad_missing = last_layer.grad is None
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        print(f"step {step} loss {loss.item():.6f} te1 last layer grad is None: {grad_missing}")

    print("te1 last layer changed:", not torch.equal(before, last_layer.detach()))
    if os.environ.get("REALWORLD_STATE"):
        state = {}
        for prefix, model in (("unet", unet), ("te1", text_encoder1), ("te2", text_encoder2)):
            state.update({f"{prefix}.{n}": p.detach().clone() for n, p in model.named_parameters() if p.requires_grad})
        torch.save(state, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
