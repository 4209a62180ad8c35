"""Mixtral's auxiliary load-balancing loss (huggingface/transformers#28093, "The balancing loss function always
return a constant"): `load_balancing_loss_func` takes the top-k gate logits and then `routing_weights =
routing_weights.softmax(dim=-1)` over those k values only, so the mean router probability per token is always
1/k and the term sends (numerically) no gradient to the router it is meant to balance (the fix: softmax over all
experts, then top-k, and average the probabilities per expert)."""
import torch
import torch.nn.functional as F
from torch import nn


def load_balancing_loss_func(gate_logits, num_experts, top_k=2):
    routing_weights, selected_experts = torch.topk(gate_logits, top_k, dim=-1)
    routing_weights = routing_weights.softmax(dim=-1)  # <- cut_term
    expert_mask = F.one_hot(selected_experts, num_experts).max(dim=-2).values.float()
    tokens_per_group_and_expert = torch.mean(expert_mask, dim=-2)
    router_prob_per_group_and_expert = torch.mean(routing_weights, dim=-1)
    return torch.mean(tokens_per_group_and_expert * router_prob_per_group_and_expert.unsqueeze(-1)) * num_experts ** 2


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
