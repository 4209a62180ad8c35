"""The LoRA DreamBooth training loop of cloneofsimo/lora (cloneofsimo/lora#263): optimizer.zero_grad() sits after
the backward of the loss and before optimizer.step(), so every step applies erased gradients and the injected LoRA
weights never move; the loss stays where it started."""
import torch
import torch.nn.functional as F
from torch import nn


class LoraInjectedLinear(nn.Module):
    def __init__(self, in_features, out_features, r=4):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features).requires_grad_(False)
        self.lora_down = nn.Linear(in_features, r, bias=False)
        self.lora_up = nn.Linear(r, out_features, bias=False)
        nn.init.zeros_(self.lora_up.weight)

    def forward(self, x):
        return self.linear(x) + self.lora_up(self.lora_down(x))


torch.manual_seed(0)
unet = nn.Sequential(LoraInjectedLinear(16, 32), nn.SiLU(), LoraInjectedLinear(32, 16))
params_to_optimize = [p for p in unet.parameters() if p.requires_grad]
optimizer = torch.optim.AdamW(params_to_optimize, lr=1e-3)
latents = torch.randn(8, 16)
for step in range(20):
    noise = torch.randn_like(latents)
    noisy = latents + noise
    loss = F.mse_loss(unet(noisy), noise)
    loss.backward()
    optimizer.zero_grad()  # <- optimizer
    optimizer.step()
    if step % 5 == 0:
        print(f"step {step}: loss {loss.item():.4f}")
print("lora_up still zero:", bool((unet[0].lora_up.weight == 0).all()))
