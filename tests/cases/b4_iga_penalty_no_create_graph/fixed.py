"""The fixed twin: create_graph=True on both autograd.grad calls, so the penalty reaches the weights."""
import torch
from torch import autograd, nn
import torch.nn.functional as F

torch.manual_seed(0)
network = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
optimizer = torch.optim.SGD(network.parameters(), lr=1e-3)
minibatches = [(torch.randn(16, 6), torch.randint(0, 3, (16,))) for _ in range(2)]
penalty_weight = 1000.0
for step in range(3):
    total_loss = 0
    grads = []
    for x, y in minibatches:
        env_loss = F.cross_entropy(network(x), y)
        total_loss += env_loss
        grads.append(autograd.grad(env_loss, network.parameters(), create_graph=True))
    mean_loss = total_loss / len(minibatches)
    mean_grad = autograd.grad(mean_loss, network.parameters(), create_graph=True)
    penalty_value = 0
    for grad in grads:
        for g, mean_g in zip(grad, mean_grad):
            penalty_value += (g - mean_g).pow(2).sum()
    optimizer.zero_grad()
    (mean_loss + penalty_weight * penalty_value).backward()
    optimizer.step()
    print(f"step {step}: loss {mean_loss.item():.4f} penalty {penalty_value.item():.6f}")
