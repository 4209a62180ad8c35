"""Continuing to train a LoRA adapter loaded from a checkpoint (huggingface/peft#1340): PeftModel.from_pretrained
loads adapters for inference unless is_trainable=True, so every LoRA weight is frozen next to the frozen base
model and the trainer's backward raises "element 0 of tensors does not require grad and does not have a grad_fn".
The loader is reduced to plain torch."""
import torch
import torch.nn.functional as F
from torch import nn


class LoraLinear(nn.Module):
    def __init__(self, base, r=4):
        super().__init__()
        self.base = base
        self.lora_A = nn.Linear(base.in_features, r, bias=False)
        self.lora_B = nn.Linear(r, base.out_features, bias=False)

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x))


def from_pretrained(base_model, adapter_state, is_trainable=False):
    base_model.requires_grad_(False)
    model = nn.Sequential(LoraLinear(base_model[0]), nn.ReLU(), LoraLinear(base_model[2]))
    model.load_state_dict(adapter_state, strict=False)
    for name, p in model.named_parameters():
        p.requires_grad = is_trainable and "lora_" in name
    return model


torch.manual_seed(0)
base = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))
checkpoint = {k: v for k, v in nn.Sequential(LoraLinear(nn.Linear(16, 32)), nn.ReLU(), LoraLinear(nn.Linear(32, 8))).state_dict().items() if "lora_" in k}
model = from_pretrained(base, checkpoint)  # <- autograd_error
optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad] or list(model.parameters()), lr=1e-3)
x, y = torch.randn(32, 16), torch.randn(32, 8)
for step in range(3):
    loss = F.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
