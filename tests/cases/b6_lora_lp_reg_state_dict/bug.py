"""Lp-regularisation of LoRA weights added to the training loss (tdrussell/qlora-pipe#29): the composite
matrices W = scale * B @ A are read from model.state_dict(), whose tensors are detached from the graph, so the
regularisation term is logged but never pulls the LoRA weights; only the language-model loss trains them."""
import torch
import torch.nn.functional as F
from torch import nn


class LoraLinear(nn.Module):
    def __init__(self, cin, cout, r=2, alpha=4):
        super().__init__()
        self.base_layer = nn.Linear(cin, cout).requires_grad_(False)
        self.lora_A = nn.Linear(cin, r, bias=False)
        self.lora_B = nn.Linear(r, cout, bias=False)
        self.scaling = alpha / r

    def forward(self, x):
        return self.base_layer(x) + self.lora_B(self.lora_A(x)) * self.scaling


def compute_lora_lp_regularisation(model, p=2.0):
    total_norm = 0.0
    lora_count = 0
    state_dict = model.state_dict()  # <- cut_term
    for name, module in model.named_modules():
        if isinstance(module, LoraLinear):
            A = state_dict[f"{name}.lora_A.weight"]
            B = state_dict[f"{name}.lora_B.weight"]
            W = module.scaling * B @ A
            total_norm += W.norm(p) ** p
            lora_count += 1
    return total_norm / lora_count


torch.manual_seed(0)
tokens, labels = torch.randn(12, 8), torch.randint(0, 10, (12,))
trained = {}
for lora_weight_decay in (0.0, 0.5):
    torch.manual_seed(1)
    model = nn.Sequential(LoraLinear(8, 16), nn.GELU(), LoraLinear(16, 10))
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2, weight_decay=0.0)
    for step in range(3):
        lm_loss = F.cross_entropy(model(tokens), labels)
        reg_loss = compute_lora_lp_regularisation(model)
        loss = lm_loss + lora_weight_decay * reg_loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    trained[lora_weight_decay] = model[0].lora_B.weight.detach().clone()
    print(f"decay {lora_weight_decay}: lm {lm_loss.item():.4f} reg {reg_loss.item():.4f}")
print("the regularisation changes the LoRA weights:", not torch.equal(trained[0.0], trained[0.5]))
