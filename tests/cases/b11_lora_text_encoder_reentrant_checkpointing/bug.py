"""LoRA DreamBooth with --gradient_checkpointing --train_text_encoder (cloneofsimo/lora#26): "Running with gradient
checkpointing prevents LoRA weight updates"; the text encoder's layers run under reentrant checkpointing, whose
input (the frozen token embeddings) does not require grad, so the layer runs without a graph and the LoRA up/down
weights injected into it stay as initialised while the UNet's LoRA trains (the fix: non-reentrant checkpointing,
or make the embeddings' output require grad)."""
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint


class LoraInjectedLinear(nn.Module):
    def __init__(self, in_features, out_features, r=4):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features).requires_grad_(False)
        self.lora_down = nn.Linear(in_features, r, bias=False)
        self.lora_up = nn.Linear(r, out_features, bias=False)
        nn.init.zeros_(self.lora_up.weight)

    def forward(self, x):
        return self.linear(x) + self.lora_up(self.lora_down(x))


class TextEncoder(nn.Module):
    def __init__(self, vocab=50, dim=16, gradient_checkpointing=True):
        super().__init__()
        self.embeddings = nn.Embedding(vocab, dim).requires_grad_(False)
        self.layers = nn.ModuleList([LoraInjectedLinear(dim, dim) for _ in range(2)])
        self.gradient_checkpointing = gradient_checkpointing

    def forward(self, input_ids):
        hidden = self.embeddings(input_ids)
        for layer in self.layers:
            if self.gradient_checkpointing and self.training:
                hidden = checkpoint(layer, hidden, use_reentrant=True)  # <- no_grad
            else:
                hidden = layer(hidden)
        return hidden


torch.manual_seed(0)
text_encoder = TextEncoder()
unet = LoraInjectedLinear(16, 16)
params = [p for m in (text_encoder, unet) for n, p in m.named_parameters() if "lora" in n]
optimizer = torch.optim.AdamW(params, lr=1e-3)
input_ids, latents = torch.randint(0, 50, (4, 7)), torch.randn(4, 7, 16)
up_before = text_encoder.layers[0].lora_up.weight.detach().clone()
for step in range(3):
    loss = F.mse_loss(unet(text_encoder(input_ids)), latents)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"text encoder lora_up grad: {text_encoder.layers[0].lora_up.weight.grad}")
print(f"text encoder lora_up changed: {not torch.equal(text_encoder.layers[0].lora_up.weight, up_before)}")
