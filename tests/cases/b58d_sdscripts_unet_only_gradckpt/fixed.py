# Report: "SD1.5のlora学習の際に--network_train_unet_onlyを指定すると、unetのdown側（IN1〜IN8）の
#          lora_up.weightの値が0になる" (with --network_train_unet_only, the LoRA lora_up weights of the
#          U-Net down blocks stay 0)  https://github.com/kohya-ss/sd-scripts/issues/821
# What went wrong: train_network.py with --network_train_unet_only --gradient_checkpointing. The U-Net
#   blocks are checkpointed with the reentrant torch.utils.checkpoint, which runs the block under no_grad
#   and only builds a graph if one of its *inputs* requires grad. noisy_latents (from the VAE) and the
#   text-encoder output (frozen text encoder) do not, conv_in is frozen, so every checkpointed down block
#   sees inputs without grad: its LoRA modules get no gradient. The (non-checkpointed) mid block's LoRA makes
#   its output require grad, so the up blocks train, which hid the bug.
# Fix (train_network.py): make the U-Net input require grad before calling the U-Net:
#   noise_pred = self.call_unet(..., noisy_latents.requires_grad_(train_unet), ...)
# Plain-torch rewrite of the diffusers UNet2DConditionModel / kohya LoRANetwork pieces the bug goes through.
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint

torch.manual_seed(0)
C, CTX = 8, 6


class Attention(nn.Module):
    def __init__(self, dim, ctx_dim=None):
        super().__init__()
        ctx_dim = ctx_dim or dim
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_k = nn.Linear(ctx_dim, dim, bias=False)
        self.to_v = nn.Linear(ctx_dim, dim, bias=False)
        self.to_out = nn.ModuleList([nn.Linear(dim, dim)])

    def forward(self, x, context=None):
        context = x if context is None else context
        q, k, v = self.to_q(x), self.to_k(context), self.to_v(context)
        attn = torch.softmax(q @ k.transpose(1, 2) / q.shape[-1] ** 0.5, dim=-1)
        return self.to_out[0](attn @ v)


class Transformer2DModel(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.GroupNorm(2, dim)
        self.proj_in = nn.Linear(dim, dim)
        self.attn1 = Attention(dim)
        self.attn2 = Attention(dim, CTX)
        self.proj_out = nn.Linear(dim, dim)

    def forward(self, hidden_states, encoder_hidden_states):
        b, c, h, w = hidden_states.shape
        residual = hidden_states
        x = self.norm(hidden_states).permute(0, 2, 3, 1).reshape(b, h * w, c)
        x = self.proj_in(x)
        x = x + self.attn1(x)
        x = x + self.attn2(x, encoder_hidden_states)
        x = self.proj_out(x).reshape(b, h, w, c).permute(0, 3, 1, 2)
        return x + residual


class ResnetBlock2D(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.conv1 = nn.Conv2d(dim, dim, 3, padding=1)
        self.conv2 = nn.Conv2d(dim, dim, 3, padding=1)

    def forward(self, x):
        return x + self.conv2(F.silu(self.conv1(F.silu(x))))


def create_custom_forward(module):
    def custom_forward(*inputs):
        return module(*inputs)
    return custom_forward


class CrossAttnDownBlock2D(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.resnets = nn.ModuleList([ResnetBlock2D(dim)])
        self.attentions = nn.ModuleList([Transformer2DModel(dim)])
        self.gradient_checkpointing = False

    def forward(self, hidden_states, encoder_hidden_states):
        for resnet, attn in zip(self.resnets, self.attentions):
            if self.training and self.gradient_checkpointing:
                hidden_states = torch.utils.checkpoint.checkpoint(
                    create_custom_forward(resnet), hidden_states, use_reentrant=True)
                hidden_states = torch.utils.checkpoint.checkpoint(
                    create_custom_forward(attn), hidden_states, encoder_hidden_states, use_reentrant=True)
            else:
                hidden_states = attn(resnet(hidden_states), encoder_hidden_states)
        return hidden_states


class UNetMidBlock2DCrossAttn(nn.Module):  # no gradient checkpointing in this diffusers version
    def __init__(self, dim):
        super().__init__()
        self.resnets = nn.ModuleList([ResnetBlock2D(dim)])
        self.attentions = nn.ModuleList([Transformer2DModel(dim)])

    def forward(self, hidden_states, encoder_hidden_states):
        return self.attentions[0](self.resnets[0](hidden_states), encoder_hidden_states)


class CrossAttnUpBlock2D(CrossAttnDownBlock2D):
    pass


class UNet2DConditionModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv_in = nn.Conv2d(4, C, 3, padding=1)
        self.down_blocks = nn.ModuleList([CrossAttnDownBlock2D(C), CrossAttnDownBlock2D(C)])
        self.mid_block = UNetMidBlock2DCrossAttn(C)
        self.up_blocks = nn.ModuleList([CrossAttnUpBlock2D(C), CrossAttnUpBlock2D(C)])
        self.conv_out = nn.Conv2d(C, 4, 3, padding=1)

    def enable_gradient_checkpointing(self):
        for b in list(self.down_blocks) + list(self.up_blocks):
            b.gradient_checkpointing = True

    def forward(self, sample, timestep, encoder_hidden_states):
        h = self.conv_in(sample)
        skips = []
        for blk in self.down_blocks:
            h = blk(h, encoder_hidden_states)
            skips.append(h)
        h = self.mid_block(h, encoder_hidden_states)
        for blk in self.up_blocks:
            h = blk(h + skips.pop(), encoder_hidden_states)
        return self.conv_out(h)


class LoRAModule(nn.Module):
    """kohya networks/lora.py: replaces forward of the original Linear"""
    def __init__(self, lora_name, org_module, multiplier=1.0, lora_dim=4, alpha=1):
        super().__init__()
        self.lora_name = lora_name
        self.lora_down = nn.Linear(org_module.in_features, lora_dim, bias=False)
        self.lora_up = nn.Linear(lora_dim, org_module.out_features, bias=False)
        nn.init.kaiming_uniform_(self.lora_down.weight, a=5 ** 0.5)
        nn.init.zeros_(self.lora_up.weight)
        self.multiplier, self.scale = multiplier, alpha / lora_dim
        self.org_module = org_module

    def apply_to(self):
        self.org_forward = self.org_module.forward
        self.org_module.forward = self.forward
        del self.org_module

    def forward(self, x):
        return self.org_forward(x) + self.lora_up(self.lora_down(x)) * self.multiplier * self.scale


class LoRANetwork(nn.Module):
    def __init__(self, unet):
        super().__init__()
        loras = []
        for name, module in unet.named_modules():
            if module.__class__.__name__ == "Transformer2DModel":
                for child_name, child in module.named_modules():
                    if isinstance(child, nn.Linear):
                        lora_name = ("lora_unet." + name + "." + child_name).replace(".", "_")
                        loras.append(LoRAModule(lora_name, child))
        self.unet_loras = nn.ModuleList(loras)

    def apply_to(self):
        for lora in self.unet_loras:
            lora.apply_to()


class FrozenTextEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embeddings = nn.Embedding(20, CTX)

    def forward(self, input_ids):
        return self.embeddings(input_ids)


def call_unet(unet, noisy_latents, timesteps, text_conds):
    return unet(noisy_latents, timesteps, text_conds)


unet = UNet2DConditionModel()
text_encoder = FrozenTextEncoder()
unet.requires_grad_(False)
text_encoder.requires_grad_(False)
network = LoRANetwork(unet)
network.apply_to()
unet.enable_gradient_checkpointing()
unet.train()
network.train()
optimizer = torch.optim.AdamW(network.parameters(), lr=1e-3)
train_unet = True  # --network_train_unet_only

latents = torch.randn(2, 4, 4, 4)
input_ids = torch.randint(0, 20, (2, 5))
with torch.no_grad():
    encoder_hidden_states = text_encoder(input_ids)
noise = torch.randn_like(latents)
noisy_latents = latents + 0.5 * noise
timesteps = torch.randint(0, 1000, (2,))

noise_pred = call_unet(unet, noisy_latents.requires_grad_(train_unet), timesteps, encoder_hidden_states)
loss = F.mse_loss(noise_pred, noise)
optimizer.zero_grad()
loss.backward()
down_lora = network.unet_loras[0]
up_lora = [l for l in network.unet_loras if "up_blocks" in l.lora_name][0]
print(up_lora.lora_name, "grad is None:", up_lora.lora_up.weight.grad is None)
print(down_lora.lora_name, "lora_up grad:", down_lora.lora_up.weight.grad)
optimizer.step()
