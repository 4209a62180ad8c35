"""LoRA adapters on a frozen base model: the pretrained Linear weights are frozen, low-rank A and B
are trained (B starts at zero), the optimizer gets only trainable parameters; finally merged."""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class LoRALinear(nn.Module):
    def __init__(self, base: nn.Linear, r=4, alpha=8):
        super().__init__()
        self.base = base
        self.lora_A = nn.Parameter(torch.empty(r, base.in_features))
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, r))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        self.scaling = alpha / r

    def forward(self, x):
        return self.base(x) + (x @ self.lora_A.t() @ self.lora_B.t()) * self.scaling

    @torch.no_grad()
    def merge(self):
        self.base.weight += (self.lora_B @ self.lora_A) * self.scaling


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 3))
    for p in model.parameters():
        p.requires_grad_(False)
    model[0] = LoRALinear(model[0])
    model[2] = LoRALinear(model[2])
    for p in model[4].parameters():
        p.requires_grad_(True)
    trainable = [p for p in model.parameters() if p.requires_grad]
    print("trainable", sum(p.numel() for p in trainable), "of", sum(p.numel() for p in model.parameters()))
    optimizer = torch.optim.AdamW(trainable, lr=1e-2)
    x, y = torch.randn(32, 8), torch.randint(0, 3, (32,))
    for step in range(4):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.6f}")
    model[0].merge()
    model[2].merge()
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
