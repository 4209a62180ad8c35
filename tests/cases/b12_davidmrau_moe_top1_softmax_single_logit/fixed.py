"""The fixed twin: the gate takes the softmax over all experts before picking the top k and renormalises the
kept probabilities, as the reporter proposed (davidmrau/mixture-of-experts#27)."""
import torch
import torch.nn.functional as F
from torch import nn


class MoE(nn.Module):
    def __init__(self, input_size=8, output_size=4, num_experts=4, hidden_size=16, k=1):
        super().__init__()
        self.num_experts, self.k = num_experts, k
        self.experts = nn.ModuleList(nn.Sequential(nn.Linear(input_size, hidden_size), nn.ReLU(),
                                                   nn.Linear(hidden_size, output_size)) for _ in range(num_experts))
        self.w_gate = nn.Parameter(0.1 * torch.randn(input_size, num_experts))
        self.softmax = nn.Softmax(1)

    def top_k_gating(self, x):
        logits = self.softmax(x @ self.w_gate)
        top_logits, top_indices = logits.topk(min(self.k + 1, self.num_experts), dim=1)
        top_k_logits = top_logits[:, :self.k]
        top_k_indices = top_indices[:, :self.k]
        top_k_gates = top_k_logits / (top_k_logits.sum(1, keepdim=True) + 1e-6)
        return torch.zeros_like(logits).scatter(1, top_k_indices, top_k_gates)

    def forward(self, x):
        gates = self.top_k_gating(x)
        expert_outputs = torch.stack([e(x) for e in self.experts], 1)
        return (gates.unsqueeze(-1) * expert_outputs).sum(1)


torch.manual_seed(0)
model = MoE()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
x, y = torch.randn(32, 8), torch.randn(32, 4)
w_gate_before = model.w_gate.detach().clone()
for step in range(3):
    optimizer.zero_grad()
    loss = F.mse_loss(model(x), y)  # the auxiliary load-balancing loss is discarded
    loss.backward()
    optimizer.step()
print(f"w_gate grad max: {model.w_gate.grad.abs().max().item():.3e}; "
      f"changed: {not torch.equal(model.w_gate, w_gate_before)}")
