"""yfzhang114/SliME issue #3 "Bug in noisy mixture of experts", https://github.com/yfzhang114/SliME/issues/3:
in the gated vision projector's `noisy_top_k_gating`, "`raw_noise_stddev = x @ self.w_gate`, Here instead of
self.w_gate there should be self.w_noise". The author: "You are correct; there is an error in using self.w_gate
instead of self.w_noise." So the learnable noise projection `w_noise` (a Parameter the optimizer holds) is never
used: its .grad stays None and it never changes, while w_gate is used twice. Fix: `x @ self.w_noise`.
GatedBlock below keeps SliME's gate code (k=2 over two experts: the MLP projection and a resampler, here a small
attention pooling) in float32 instead of bfloat16; an MSE to random LLM-space targets stands in for the LLM loss."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)


class Resampler(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, num_heads=2, batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x)[0]


class GatedBlock(nn.Module):
    def __init__(self, mm_hidden_size=16, hidden_size=24):
        super().__init__()
        self.projection = nn.Sequential(nn.Linear(mm_hidden_size, hidden_size), nn.GELU(),
                                        nn.Linear(hidden_size, hidden_size))
        self.attn = Resampler(mm_hidden_size)
        # Mixture of Experts
        self.expert_ffn = [self.projection, self.attn]
        self.num_experts = len(self.expert_ffn)
        self.w_gate = nn.Parameter(torch.zeros(mm_hidden_size, self.num_experts), requires_grad=True)
        self.w_noise = nn.Parameter(torch.zeros(mm_hidden_size, self.num_experts), requires_grad=True)
        self.softplus = nn.Softplus()
        self.softmax = nn.Softmax(1)
        self.k = 2

    def _gates_to_load(self, gates):
        return (gates > 0).sum(0)

    def noisy_top_k_gating(self, x, noise_epsilon=1e-2):
        clean_logits = x @ self.w_gate.to(x.dtype)
        if self.training:
            raw_noise_stddev = x @ self.w_noise
            noise_stddev = self.softplus(raw_noise_stddev) + noise_epsilon
            noisy_logits = clean_logits + (torch.randn_like(clean_logits) * noise_stddev)
            logits = noisy_logits
        else:
            logits = clean_logits
        # calculate topk + 1 that will be needed for the noisy gates
        logits = self.softmax(logits)
        top_logits, top_indices = logits.topk(min(self.k + 1, self.num_experts), dim=1)
        top_k_logits = top_logits[:, : self.k]
        top_k_indices = top_indices[:, : self.k]
        top_k_gates = top_k_logits / (top_k_logits.sum(1, keepdim=True) + 1e-6)  # normalization
        zeros = torch.zeros_like(logits, requires_grad=True)
        gates = zeros.scatter(1, top_k_indices, top_k_gates)
        load = self._gates_to_load(gates)
        return gates, load

    def forward(self, x):
        N, C, D = x.shape
        expert_outputs = [self.projection(x)]
        for i in range(1, self.num_experts):
            expert_output = self.expert_ffn[i](x)
            expert_output = self.projection(expert_output)
            expert_outputs.append(expert_output)
        gates, load = self.noisy_top_k_gating(x.reshape(N * C, D))
        gates = gates.reshape(N, C, -1)
        output = torch.stack(expert_outputs, dim=-1)
        output = torch.matmul(output, gates.unsqueeze(-1)).squeeze(-1)
        return output


torch.manual_seed(0)
projector = GatedBlock()
projector.train()
optimizer = torch.optim.AdamW(projector.parameters(), lr=1e-2)
w_noise_before = projector.w_noise.detach().clone()
for step in range(5):
    image_features = torch.randn(2, 9, 16)
    targets = torch.randn(2, 9, 24)
    loss = F.mse_loss(projector(image_features), targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("w_gate.grad is None:", projector.w_gate.grad is None)
print("w_noise.grad is None:", projector.w_noise.grad is None)
print("w_noise changed:", not torch.equal(w_noise_before, projector.w_noise))
