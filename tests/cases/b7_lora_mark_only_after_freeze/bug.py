"""loralib's mark_only_lora_as_trainable (microsoft/LoRA#125): it only switches requires_grad off for names
without "lora_", so after the whole model was frozen first (model.requires_grad_(False)) the LoRA matrices stay
frozen; only the classifier head, re-enabled by hand, trains and the adapters never move."""
import torch
import torch.nn.functional as F
from torch import nn


class LoRALinear(nn.Linear):
    def __init__(self, in_features, out_features, r=4):
        super().__init__(in_features, out_features)
        self.lora_A = nn.Parameter(torch.randn(r, in_features) * 0.01)
        self.lora_B = nn.Parameter(torch.randn(out_features, r) * 0.01)

    def forward(self, x):
        return super().forward(x) + x @ self.lora_A.t() @ self.lora_B.t()


def mark_only_lora_as_trainable(model):
    for n, p in model.named_parameters():
        if "lora_" not in n:  # <- no_update
            p.requires_grad = False


torch.manual_seed(0)
backbone = nn.Sequential(LoRALinear(16, 32), nn.ReLU(), LoRALinear(32, 32), nn.ReLU())
head = nn.Linear(32, 3)
backbone.requires_grad_(False)
mark_only_lora_as_trainable(backbone)
params = [p for p in list(backbone.parameters()) + list(head.parameters()) if p.requires_grad]
optimizer = torch.optim.AdamW(params, lr=1e-2)
x, y = torch.randn(64, 16), torch.randint(0, 3, (64,))
lora_before = backbone[0].lora_B.detach().clone()
for step in range(10):
    loss = F.cross_entropy(head(backbone(x)), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"loss {loss.item():.3f}; LoRA B changed: {not torch.equal(lora_before, backbone[0].lora_B)}")
