"""DDPM training with an EMA of the UNet, reduced from the diffusers example
examples/unconditional_image_generation/train_unconditional.py
(https://github.com/huggingface/diffusers/blob/main/examples/unconditional_image_generation/train_unconditional.py)
with `diffusers.training_utils.EMAModel`, `DDPMScheduler`, `DDPMPipeline` and `UNet2DModel` written as small
stand-ins shaped like the library code.

Suspicious-but-correct patterns kept:
  - the EMA is not a module: `EMAModel.shadow_params` are `p.clone().detach()` tensors, updated in place under
    `@torch.no_grad()` with `s_param.sub_(one_minus_decay * (s_param - param))` after every optimizer step;
  - at the end of each epoch the training weights are swapped out for evaluation:
    `ema_model.store(unet.parameters())` (detach().cpu().clone()), `ema_model.copy_to(...)`
    (`param.data.copy_`), sampling under `@torch.no_grad()` in the pipeline, then `ema_model.restore(...)`
    writes the training weights back with `param.data.copy_` and training continues;
  - the noisy input is built by the scheduler from buffers-like tensors (alphas_cumprod) with no grad;
  - `clip_grad_norm_`, an LR warmup whose first step has lr 0, `param.grad = None` style zeroing via
    `optimizer.zero_grad()`, loss logged as `loss.detach().item()`.
"""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---------------------------------------------------------------- diffusers stand-ins
def get_timestep_embedding(timesteps, embedding_dim, flip_sin_to_cos=True, downscale_freq_shift=0, max_period=10000):
    # diffusers.models.embeddings.get_timestep_embedding
    half_dim = embedding_dim // 2
    exponent = -math.log(max_period) * torch.arange(0, half_dim, dtype=torch.float32)
    exponent = exponent / (half_dim - downscale_freq_shift)
    emb = torch.exp(exponent)
    emb = timesteps[:, None].float() * emb[None, :]
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)
    if flip_sin_to_cos:
        emb = torch.cat([emb[:, half_dim:], emb[:, :half_dim]], dim=-1)
    return emb


class TimestepEmbedding(nn.Module):
    def __init__(self, in_channels, time_embed_dim):
        super().__init__()
        self.linear_1 = nn.Linear(in_channels, time_embed_dim)
        self.act = nn.SiLU()
        self.linear_2 = nn.Linear(time_embed_dim, time_embed_dim)

    def forward(self, sample):
        return self.linear_2(self.act(self.linear_1(sample)))


class ResnetBlock2D(nn.Module):
    def __init__(self, in_channels, out_channels, temb_channels, groups=4):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, in_channels)
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.time_emb_proj = nn.Linear(temb_channels, out_channels)
        self.norm2 = nn.GroupNorm(groups, out_channels)
        self.dropout = nn.Dropout(0.0)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1)
        self.nonlinearity = nn.SiLU()
        self.conv_shortcut = nn.Conv2d(in_channels, out_channels, 1) if in_channels != out_channels else None

    def forward(self, input_tensor, temb):
        hidden_states = self.nonlinearity(self.norm1(input_tensor))
        hidden_states = self.conv1(hidden_states)
        temb = self.time_emb_proj(self.nonlinearity(temb))[:, :, None, None]
        hidden_states = hidden_states + temb
        hidden_states = self.nonlinearity(self.norm2(hidden_states))
        hidden_states = self.dropout(hidden_states)
        hidden_states = self.conv2(hidden_states)
        if self.conv_shortcut is not None:
            input_tensor = self.conv_shortcut(input_tensor)
        return input_tensor + hidden_states


class UNet2DOutput:
    def __init__(self, sample):
        self.sample = sample


class UNet2DModel(nn.Module):
    """Two-resolution UNet2DModel: DownBlock2D -> mid block -> UpBlock2D with a skip connection."""

    def __init__(self, in_channels=3, out_channels=3, block_out_channels=(8, 16)):
        super().__init__()
        c0, c1 = block_out_channels
        time_embed_dim = c0 * 4
        self.time_proj_dim = c0
        self.time_embedding = TimestepEmbedding(c0, time_embed_dim)
        self.conv_in = nn.Conv2d(in_channels, c0, 3, padding=1)
        self.down_resnet = ResnetBlock2D(c0, c0, time_embed_dim)
        self.downsample = nn.Conv2d(c0, c0, 3, stride=2, padding=1)
        self.mid_resnet = ResnetBlock2D(c0, c1, time_embed_dim)
        self.upsample_conv = nn.Conv2d(c1, c1, 3, padding=1)
        self.up_resnet = ResnetBlock2D(c1 + c0, c0, time_embed_dim)
        self.conv_norm_out = nn.GroupNorm(4, c0)
        self.conv_act = nn.SiLU()
        self.conv_out = nn.Conv2d(c0, out_channels, 3, padding=1)

    def forward(self, sample, timestep):
        t_emb = get_timestep_embedding(timestep, self.time_proj_dim)
        emb = self.time_embedding(t_emb)
        sample = self.conv_in(sample)
        skip = self.down_resnet(sample, emb)
        sample = self.downsample(skip)
        sample = self.mid_resnet(sample, emb)
        sample = self.upsample_conv(F.interpolate(sample, scale_factor=2.0, mode="nearest"))
        sample = self.up_resnet(torch.cat([sample, skip], dim=1), emb)
        sample = self.conv_out(self.conv_act(self.conv_norm_out(sample)))
        return UNet2DOutput(sample=sample)


class DDPMScheduler:
    def __init__(self, num_train_timesteps=1000, beta_start=0.0001, beta_end=0.02):
        self.config = type("Config", (), {"num_train_timesteps": num_train_timesteps})()
        self.betas = torch.linspace(beta_start, beta_end, num_train_timesteps, dtype=torch.float32)
        self.alphas = 1.0 - self.betas
        self.alphas_cumprod = torch.cumprod(self.alphas, dim=0)
        self.timesteps = torch.arange(0, num_train_timesteps).flip(0)

    def add_noise(self, original_samples, noise, timesteps):
        sqrt_alpha_prod = self.alphas_cumprod[timesteps] ** 0.5
        sqrt_one_minus_alpha_prod = (1 - self.alphas_cumprod[timesteps]) ** 0.5
        while len(sqrt_alpha_prod.shape) < len(original_samples.shape):
            sqrt_alpha_prod = sqrt_alpha_prod.unsqueeze(-1)
            sqrt_one_minus_alpha_prod = sqrt_one_minus_alpha_prod.unsqueeze(-1)
        return sqrt_alpha_prod * original_samples + sqrt_one_minus_alpha_prod * noise

    def set_timesteps(self, num_inference_steps):
        step_ratio = self.config.num_train_timesteps // num_inference_steps
        self.timesteps = (torch.arange(0, num_inference_steps) * step_ratio).flip(0)

    def step(self, model_output, timestep, sample, generator=None):
        t = int(timestep)
        prev_t = t - self.config.num_train_timesteps // len(self.timesteps)
        alpha_prod_t = self.alphas_cumprod[t]
        alpha_prod_t_prev = self.alphas_cumprod[prev_t] if prev_t >= 0 else torch.tensor(1.0)
        beta_prod_t = 1 - alpha_prod_t
        current_alpha_t = alpha_prod_t / alpha_prod_t_prev
        current_beta_t = 1 - current_alpha_t
        pred_original_sample = (sample - beta_prod_t ** 0.5 * model_output) / alpha_prod_t ** 0.5
        pred_original_sample = pred_original_sample.clamp(-1, 1)
        coeff_x0 = (alpha_prod_t_prev ** 0.5 * current_beta_t) / beta_prod_t
        coeff_xt = current_alpha_t ** 0.5 * (1 - alpha_prod_t_prev) / beta_prod_t
        prev_sample = coeff_x0 * pred_original_sample + coeff_xt * sample
        if t > 0:
            variance = ((1 - alpha_prod_t_prev) / (1 - alpha_prod_t) * current_beta_t).clamp(min=1e-20)
            noise = torch.randn(model_output.shape, generator=generator)
            prev_sample = prev_sample + variance ** 0.5 * noise
        return type("SchedulerOutput", (), {"prev_sample": prev_sample})()


class DDPMPipeline:
    def __init__(self, unet, scheduler):
        self.unet = unet
        self.scheduler = scheduler

    @torch.no_grad()
    def __call__(self, generator=None, batch_size=1, num_inference_steps=1000, image_shape=(3, 8, 8)):
        image = torch.randn((batch_size, *image_shape), generator=generator)
        self.scheduler.set_timesteps(num_inference_steps)
        for t in self.scheduler.timesteps:
            model_output = self.unet(image, t.expand(batch_size)).sample
            image = self.scheduler.step(model_output, t, image, generator=generator).prev_sample
        image = (image / 2 + 0.5).clamp(0, 1)
        return image.cpu().permute(0, 2, 3, 1)  # output_type='np' gives a numpy array here


class EMAModel:
    """diffusers.training_utils.EMAModel (foreach=False path)."""

    def __init__(self, parameters, decay=0.9999, min_decay=0.0, update_after_step=0, use_ema_warmup=False,
                 inv_gamma=1.0, power=2 / 3):
        parameters = list(parameters)
        self.shadow_params = [p.clone().detach() for p in parameters]
        self.temp_stored_params = None
        self.decay = decay
        self.min_decay = min_decay
        self.update_after_step = update_after_step
        self.use_ema_warmup = use_ema_warmup
        self.inv_gamma = inv_gamma
        self.power = power
        self.optimization_step = 0
        self.cur_decay_value = None

    def get_decay(self, optimization_step):
        step = max(0, optimization_step - self.update_after_step - 1)
        if step <= 0:
            return 0.0
        if self.use_ema_warmup:
            cur_decay_value = 1 - (1 + step / self.inv_gamma) ** -self.power
        else:
            cur_decay_value = (1 + step) / (10 + step)
        cur_decay_value = min(cur_decay_value, self.decay)
        cur_decay_value = max(cur_decay_value, self.min_decay)
        return cur_decay_value

    @torch.no_grad()
    def step(self, parameters):
        parameters = list(parameters)
        self.optimization_step += 1
        decay = self.get_decay(self.optimization_step)
        self.cur_decay_value = decay
        one_minus_decay = 1 - decay
        for s_param, param in zip(self.shadow_params, parameters):
            if param.requires_grad:
                s_param.sub_(one_minus_decay * (s_param - param))
            else:
                s_param.copy_(param)

    def copy_to(self, parameters):
        parameters = list(parameters)
        for s_param, param in zip(self.shadow_params, parameters):
            param.data.copy_(s_param.to(param.device).data)

    def to(self, device=None, dtype=None):
        self.shadow_params = [p.to(device=device, dtype=dtype) if p.is_floating_point() else p.to(device=device)
                              for p in self.shadow_params]

    def store(self, parameters):
        self.temp_stored_params = [param.detach().cpu().clone() for param in parameters]

    def restore(self, parameters):
        if self.temp_stored_params is None:
            raise RuntimeError("This ExponentialMovingAverage has no `store()`ed weights to `restore()`")
        for c_param, param in zip(self.temp_stored_params, parameters):
            param.data.copy_(c_param.data)
        self.temp_stored_params = None


def get_scheduler(optimizer, num_warmup_steps, num_training_steps, num_cycles=0.5):
    # diffusers.optimization.get_cosine_schedule_with_warmup
    def lr_lambda(current_step):
        if current_step < num_warmup_steps:
            return float(current_step) / float(max(1, num_warmup_steps))
        progress = float(current_step - num_warmup_steps) / float(max(1, num_training_steps - num_warmup_steps))
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * float(num_cycles) * 2.0 * progress)))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)


class Accelerator:
    """accelerate.Accelerator stand-in: one process, gradient_accumulation_steps=1."""

    sync_gradients = True
    is_main_process = True

    class _NoSync:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    def accumulate(self, model):
        return self._NoSync()

    def backward(self, loss):
        loss.backward()

    def clip_grad_norm_(self, parameters, max_norm):
        return torch.nn.utils.clip_grad_norm_(parameters, max_norm)

    def unwrap_model(self, model):
        return model


# ---------------------------------------------------------------- training script
def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    accelerator = Accelerator()
    model = UNet2DModel(in_channels=3, out_channels=3)
    ema_model = EMAModel(model.parameters(), decay=0.9999, use_ema_warmup=True, inv_gamma=1.0, power=3 / 4)
    noise_scheduler = DDPMScheduler(num_train_timesteps=100)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.95, 0.999), weight_decay=1e-6, eps=1e-8)

    dataset = [torch.rand(4, 3, 8, 8) * 2 - 1 for _ in range(3)]
    num_epochs = 2
    lr_scheduler = get_scheduler(optimizer, num_warmup_steps=2, num_training_steps=len(dataset) * num_epochs)
    ema_model.to(torch.device("cpu"))

    global_step = 0
    for epoch in range(num_epochs):
        model.train()
        for step, clean_images in enumerate(dataset):
            noise = torch.randn(clean_images.shape)
            bsz = clean_images.shape[0]
            timesteps = torch.randint(0, noise_scheduler.config.num_train_timesteps, (bsz,)).long()
            noisy_images = noise_scheduler.add_noise(clean_images, noise, timesteps)

            with accelerator.accumulate(model):
                model_output = model(noisy_images, timesteps).sample
                loss = F.mse_loss(model_output.float(), noise.float())
                accelerator.backward(loss)
                if accelerator.sync_gradients:
                    accelerator.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                lr_scheduler.step()
                optimizer.zero_grad()

            if accelerator.sync_gradients:
                ema_model.step(model.parameters())
                global_step += 1
            logs = {"loss": loss.detach().item(), "lr": lr_scheduler.get_last_lr()[0], "step": global_step,
                    "ema_decay": ema_model.cur_decay_value}
            print(f"step {global_step - 1} loss {loss.item():.6f}")

        if accelerator.is_main_process:
            unet = accelerator.unwrap_model(model)
            ema_model.store(unet.parameters())
            ema_model.copy_to(unet.parameters())
            pipeline = DDPMPipeline(unet=unet, scheduler=noise_scheduler)
            generator = torch.Generator().manual_seed(0)
            images = pipeline(generator=generator, batch_size=2, num_inference_steps=4)
            _images_processed = (images * 255).round().to(torch.uint8)  # tracker.add_images(...)
            ema_model.restore(unet.parameters())

    if os.environ.get("REALWORLD_STATE"):
        torch.save({"unet": model.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
