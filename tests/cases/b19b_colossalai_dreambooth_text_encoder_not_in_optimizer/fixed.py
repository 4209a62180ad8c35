"""ColossalAI's DreamBooth example (hpcaitech/ColossalAI#3146,
https://github.com/hpcaitech/ColossalAI/issues/3146): examples/images/dreambooth/train_dreambooth_colossalai.py.
The user wants to fine-tune the text encoder along with the UNet, sets text_encoder.requires_grad_(True) and
text_encoder.train(), but after training text_encoder.text_model.encoder.layers[3].self_attn.q_proj.weight has
not changed (text_encoder/pytorch_model.bin is identical).
Why: the optimizer is built from the UNet alone (at the time GeminiAdamOptimizer(unet, ...), now
HybridAdam(unet.parameters(), ...)); the text encoder's weights get gradients every step but are in no optimizer.
Fix: give the optimizer the text encoder's parameters too, as diffusers' train_dreambooth.py does with
itertools.chain(unet.parameters(), text_encoder.parameters())."""
import itertools
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import nn


class CLIPTextModel(nn.Module):  # transformers stand-in: returns a tuple, [0] is last_hidden_state
    def __init__(self):
        super().__init__()
        self.embeddings = nn.Embedding(49, 16)
        self.q_proj = nn.Linear(16, 16)

    def forward(self, input_ids):
        return (self.q_proj(self.embeddings(input_ids)),)


class AutoencoderKL(nn.Module):  # diffusers stand-in: encode(...).latent_dist.sample()
    def __init__(self):
        super().__init__()
        self.encoder = nn.Conv2d(3, 4, 4, stride=4)

    def encode(self, x):
        h = self.encoder(x)
        return SimpleNamespace(latent_dist=SimpleNamespace(sample=lambda: h))


class UNet2DConditionModel(nn.Module):  # diffusers stand-in: unet(noisy, t, cond).sample
    def __init__(self):
        super().__init__()
        self.conv_in = nn.Conv2d(4, 16, 1)
        self.conv_out = nn.Conv2d(16, 4, 1)

    def forward(self, sample, timesteps, encoder_hidden_states):
        h = self.conv_in(sample) + encoder_hidden_states.mean(1)[:, :, None, None]
        return SimpleNamespace(sample=self.conv_out(F.silu(h)))


class DDPMScheduler:  # diffusers stand-in
    def __init__(self, num_train_timesteps=1000):
        self.config = SimpleNamespace(num_train_timesteps=num_train_timesteps, prediction_type="epsilon")
        self.alphas_cumprod = torch.cumprod(1 - torch.linspace(1e-4, 0.02, num_train_timesteps), 0)

    def add_noise(self, latents, noise, timesteps):
        a = self.alphas_cumprod[timesteps].sqrt()[:, None, None, None]
        return a * latents + (1 - a ** 2).sqrt() * noise


class HybridAdam(torch.optim.Adam):  # colossalai.nn.optimizer stand-in (boosted: optimizer.backward(loss))
    def __init__(self, params, lr, initial_scale=2**5, clipping_norm=1.0):
        super().__init__(params, lr=lr)

    def backward(self, loss):
        loss.backward()


torch.manual_seed(0)
args = SimpleNamespace(learning_rate=5e-3, max_grad_norm=1.0, max_train_steps=5)
text_encoder, vae, unet = CLIPTextModel(), AutoencoderKL(), UNet2DConditionModel()
vae.requires_grad_(False)
text_encoder.requires_grad_(True)
text_encoder.train()

# config optimizer for colossalai zero
optimizer = HybridAdam(itertools.chain(unet.parameters(), text_encoder.parameters()), lr=args.learning_rate, initial_scale=2**5, clipping_norm=args.max_grad_norm)
noise_scheduler = DDPMScheduler()

before = text_encoder.q_proj.weight.detach().clone()
batch = {"input_ids": torch.randint(0, 49, (2, 8)), "pixel_values": torch.randn(2, 3, 16, 16)}
for step in range(args.max_train_steps):
    optimizer.zero_grad()
    latents = vae.encode(batch["pixel_values"]).latent_dist.sample()
    latents = latents * 0.18215
    noise = torch.randn_like(latents)
    bsz = latents.shape[0]
    timesteps = torch.randint(0, noise_scheduler.config.num_train_timesteps, (bsz,), device=latents.device)
    noisy_latents = noise_scheduler.add_noise(latents, noise, timesteps)
    encoder_hidden_states = text_encoder(batch["input_ids"])[0]
    model_pred = unet(noisy_latents, timesteps, encoder_hidden_states).sample
    target = noise
    loss = F.mse_loss(model_pred.float(), target.float(), reduction="mean")
    optimizer.backward(loss)
    optimizer.step()
    print(f"step {step} loss={loss.item():.4f}")

print("text_encoder grad is None:", text_encoder.q_proj.weight.grad is None)
print("text_encoder q_proj changed:", not torch.equal(before, text_encoder.q_proj.weight))
