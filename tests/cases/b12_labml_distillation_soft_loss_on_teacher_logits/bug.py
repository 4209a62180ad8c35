"""Knowledge distillation (labmlai/annotated_deep_learning_paper_implementations#66): the soft-target term computes
`soft_prob = log_softmax(large_logits / T)` from the teacher's logits a second time instead of from the student's
`output`, so the KL term compares the teacher with itself. The maintainer: "It's not a small bug, it just completely
stops doing the distillation." The hard-label term still trains the student; the distillation term adds nothing."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
large = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 5)).eval()
large.requires_grad_(False)
model = nn.Sequential(nn.Linear(20, 8), nn.ReLU(), nn.Linear(8, 5))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
kl_div = nn.KLDivLoss(log_target=True, reduction="batchmean")
temperature, soft_targets_weight = 5.0, 100.0
data, target = torch.randn(32, 20), torch.randint(0, 5, (32,))
for step in range(3):
    with torch.no_grad():
        large_logits = large(data)
    output = model(data)
    soft_targets = F.log_softmax(large_logits / temperature, dim=-1)
    soft_prob = F.log_softmax(large_logits / temperature, dim=-1)  # <- cut_term
    soft_targets_loss = kl_div(soft_prob, soft_targets)
    loss = F.cross_entropy(output, target) + soft_targets_weight * soft_targets_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"soft-target loss: {soft_targets_loss.item():.4f}, requires grad: {soft_targets_loss.requires_grad}")
