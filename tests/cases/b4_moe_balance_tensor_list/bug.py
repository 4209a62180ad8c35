"""fastmoe's Megatron balance loss (laekov/fastmoe#49): the per-layer gate losses are gathered with
torch.tensor(loss_list), which copies their values and drops their grad_fn, so the balance term added to
the language-model loss never trains the gates."""
import torch
from torch import nn
import torch.nn.functional as F


class NaiveGate(nn.Module):
    def __init__(self, dim, n_experts):
        super().__init__()
        self.gate = nn.Linear(dim, n_experts)
        self.loss = None

    def forward(self, x):
        probs = self.gate(x).softmax(dim=-1)
        self.loss = (probs.mean(0) ** 2).sum() * probs.shape[-1]
        return probs

    def get_loss(self):
        return self.loss


class Layer(nn.Module):
    def __init__(self, dim=8, n_experts=4):
        super().__init__()
        self.gate = NaiveGate(dim, n_experts)
        self.experts = nn.Linear(dim, dim * n_experts)
        self.n_experts = n_experts

    def forward(self, x):
        probs = self.gate(x)
        out = self.experts(x).view(x.shape[0], self.n_experts, -1)
        return x + (probs.unsqueeze(-1) * out).sum(1)


torch.manual_seed(0)
layers = nn.ModuleList(Layer() for _ in range(2))
optimizer = torch.optim.Adam(layers.parameters(), lr=1e-3)
balance_loss_weight = 1.0
x, y = torch.randn(16, 8), torch.randn(16, 8)
for step in range(3):
    h = x
    for layer in layers:
        h = layer(h)
    loss = F.mse_loss(h, y)
    loss_list = [layer.gate.get_loss().view(1) for layer in layers]
    bal_loss = torch.tensor(loss_list).mean() * balance_loss_weight  # <- tensor_rewrap
    loss = loss + bal_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f} balance {bal_loss.item():.4f}")
