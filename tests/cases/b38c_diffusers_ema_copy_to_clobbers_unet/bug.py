"""huggingface/diffusers issue #2321, "Not copying the model in inference and assigning ema_weights seems incorrect.",
https://github.com/huggingface/diffusers/issues/2321 (fixed by PR #2706, "train_unconditional save restore unet
parameters"): after PR #2166, examples/unconditional_image_generation/train_unconditional.py no longer deep-copies the
model for the end-of-epoch sample images; it unwraps the training UNet and calls `ema_model.copy_to(unet.parameters())`
to put the EMA weights into it before building the DDPMPipeline. copy_to writes the EMA shadow values into the very
parameters the optimizer is training, and nothing puts the trained values back, so every sampling epoch throws away
the epoch's training and the next epoch restarts from the lagging EMA weights. Maintainer (williamberman): "EMAModel.
copy_to will then copy the ema tensors over the non-ema tensors"; the fix stores the training weights with
`ema_model.store(...)` before copy_to and puts them back with `ema_model.restore(...)` after sampling. EMAModel is
reduced from diffusers.training_utils; a two-conv noise predictor stands in for UNet2DModel, random images for the
dataset, a 3-step denoise loop for DDPMPipeline."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class EMAModel:
    def __init__(self, parameters, decay=0.9999, use_ema_warmup=True, inv_gamma=1.0, power=3 / 4):
        parameters = list(parameters)
        self.shadow_params = [p.clone().detach() for p in parameters]
        self.temp_stored_params = None
        self.decay = decay
        self.use_ema_warmup = use_ema_warmup
        self.inv_gamma = inv_gamma
        self.power = power
        self.optimization_step = 0

    def get_decay(self, optimization_step):
        step = max(0, optimization_step - 1)
        if step <= 0:
            return 0.0
        if self.use_ema_warmup:
            cur_decay_value = 1 - (1 + step / self.inv_gamma) ** -self.power
        else:
            cur_decay_value = (1 + step) / (10 + step)
        return min(cur_decay_value, self.decay)

    @torch.no_grad()
    def step(self, parameters):
        parameters = list(parameters)
        self.optimization_step += 1
        one_minus_decay = 1 - self.get_decay(self.optimization_step)
        for s_param, param in zip(self.shadow_params, parameters):
            s_param.sub_(one_minus_decay * (s_param - param))

    def copy_to(self, parameters):
        for s_param, param in zip(self.shadow_params, list(parameters)):
            param.data.copy_(s_param.to(param.device).data)

    def store(self, parameters):
        self.temp_stored_params = [param.detach().cpu().clone() for param in parameters]

    def restore(self, parameters):
        for c_param, param in zip(self.temp_stored_params, parameters):
            param.data.copy_(c_param.data)
        self.temp_stored_params = None


class TinyUNet(nn.Module):
    def __init__(self, num_train_timesteps):
        super().__init__()
        self.time_embedding = nn.Embedding(num_train_timesteps, 16)
        self.conv_in = nn.Conv2d(3, 16, 3, padding=1)
        self.conv_out = nn.Conv2d(16, 3, 3, padding=1)

    def forward(self, sample, timestep):
        h = self.conv_in(sample) + self.time_embedding(timestep)[:, :, None, None]
        return self.conv_out(F.silu(h))


num_train_timesteps = 50
betas = torch.linspace(1e-4, 0.02, num_train_timesteps)
alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)


def add_noise(clean_images, noise, timesteps):
    a = alphas_cumprod[timesteps].sqrt()[:, None, None, None]
    s = (1 - alphas_cumprod[timesteps]).sqrt()[:, None, None, None]
    return a * clean_images + s * noise


@torch.no_grad()
def pipeline(unet, batch_size, generator):
    image = torch.randn(batch_size, 3, 8, 8, generator=generator)
    for t in (num_train_timesteps - 1, num_train_timesteps // 2, 0):
        t_batch = torch.full((batch_size,), t, dtype=torch.long)
        image = image - 0.1 * unet(image, t_batch)
    return image


dataset = torch.randn(24, 3, 8, 8)
model = TinyUNet(num_train_timesteps)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
ema_model = EMAModel(model.parameters())
use_ema = True

for epoch in range(2):
    model.train()
    for clean_images in dataset.split(8):
        noise = torch.randn(clean_images.shape)
        timesteps = torch.randint(0, num_train_timesteps, (clean_images.shape[0],)).long()
        noisy_images = add_noise(clean_images, noise, timesteps)
        noise_pred = model(noisy_images, timesteps)
        loss = F.mse_loss(noise_pred, noise)
        loss.backward()
        optimizer.step()
        if use_ema:
            ema_model.step(model.parameters())
        optimizer.zero_grad()

    trained = [p.detach().clone() for p in model.parameters()]
    # Generate sample images for visual inspection
    unet = model  # accelerator.unwrap_model(model)
    if use_ema:
        ema_model.copy_to(unet.parameters())  # <- state_dict_reload
    images = pipeline(unet, batch_size=4, generator=torch.Generator().manual_seed(0))

    kept = all(torch.equal(a, p) for a, p in zip(trained, model.parameters()))
    print(f"epoch {epoch}: loss {loss.item():.4f}, trained weights still in the model after sampling: {kept}")
