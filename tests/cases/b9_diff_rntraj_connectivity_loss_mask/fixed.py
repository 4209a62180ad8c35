"""The fixed twin: L3 is the expected mass on unconnected transitions under the softmax, so it has a gradient
(wtl52656/Diff-RNTraj#9)."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
n_seg, steps = 12, 6
adj = (torch.rand(n_seg, n_seg) < 0.25).float()
model = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, steps * n_seg))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randn(64, 8)
target = torch.randint(0, n_seg, (64, steps))
for step in range(60):
    logits = model(x).view(-1, steps, n_seg)
    ce = F.cross_entropy(logits.flatten(0, 1), target.flatten())
    disconnected = ((logits.softmax(-1)[:, :-1] @ (1 - adj)) * logits.softmax(-1)[:, 1:]).sum(-1)
    l3 = disconnected.mean()
    loss = 0.1 * ce + l3
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 20 == 0 or step == 59:
        with torch.no_grad():
            ids = logits.argmax(-1)
            rate = (adj[ids[:, :-1], ids[:, 1:]] == 0).float().mean().item()
        print(f"step {step}: disconnected transitions {rate:.3f}, l3 requires grad: {l3.requires_grad}")
