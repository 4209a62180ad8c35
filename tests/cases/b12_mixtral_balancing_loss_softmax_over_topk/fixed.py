"""The fixed twin: the router probabilities are a softmax over all experts, top-k picks from them and both
fractions are averaged per expert, as the merged fix does (huggingface/transformers#28093)."""
import torch
import torch.nn.functional as F
from torch import nn


def load_balancing_loss_func(gate_logits, num_experts, top_k=2):
    routing_weights = F.softmax(gate_logits, dim=-1)
    _, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
    expert_mask = F.one_hot(selected_experts, num_experts).float()
    tokens_per_expert = torch.mean(expert_mask, dim=0)
    router_prob_per_expert = torch.mean(routing_weights, dim=0)
    return torch.sum(tokens_per_expert * router_prob_per_expert.unsqueeze(0)) * num_experts


class SparseMoeBlock(nn.Module):
    def __init__(self, hidden=16, ffn=32, num_experts=4, top_k=2):
        super().__init__()
        self.num_experts, self.top_k = num_experts, top_k
        self.gate = nn.Linear(hidden, num_experts, bias=False)
        self.experts = nn.ModuleList(nn.Sequential(nn.Linear(hidden, ffn), nn.SiLU(), nn.Linear(ffn, hidden))
                                     for _ in range(num_experts))

    def forward(self, x):
        router_logits = self.gate(x)
        routing_weights, selected = torch.topk(F.softmax(router_logits, dim=-1), self.top_k, dim=-1)
        routing_weights = routing_weights / routing_weights.sum(dim=-1, keepdim=True)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            weight = (routing_weights * (selected == e)).sum(-1, keepdim=True)
            out = out + weight * expert(x)
        return out, router_logits


torch.manual_seed(0)
moe, head = SparseMoeBlock(), nn.Linear(16, 1)
optimizer = torch.optim.AdamW(list(moe.parameters()) + list(head.parameters()), lr=1e-3)
x, y = torch.randn(64, 16), torch.randn(64, 1)
for step in range(3):
    optimizer.zero_grad()
    hidden, router_logits = moe(x)
    aux_loss = load_balancing_loss_func(router_logits, moe.num_experts, moe.top_k)
    aux_grad = torch.autograd.grad(aux_loss, moe.gate.weight, retain_graph=True)[0]
    loss = F.mse_loss(head(hidden), y) + 0.02 * aux_loss
    loss.backward()
    optimizer.step()
    print(f"step {step}: aux loss {aux_loss.item():.4f}, its gradient on the router: {aux_grad.abs().max().item():.1e}")
