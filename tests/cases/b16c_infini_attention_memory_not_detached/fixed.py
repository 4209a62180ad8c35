"""jlamprou/Infini-Attention, https://github.com/jlamprou/Infini-Attention/issues/3

What the user saw: training segment by segment (one backward per segment, gradient accumulation over the
segments of a sequence) raised "RuntimeError: Trying to backward through the graph a second time (or
directly access saved tensors after they have already been freed)" at the second segment's backward;
the only way round it was backward(retain_graph=True), which costs the memory Infini-attention saves.
Why: _update_memory stores updated_M / updated_z, which carry the graph of the previous segment, as the
compressive memory; the next segment reads self.M, so its loss reaches back into the previous segment's
graph, already freed by the previous backward.
Fix (the maintainer's answer): detach M and z in _update_memory (self.M = updated_M.detach(), same for z).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class InfiniAttention(nn.Module):
    def __init__(self, hidden_size=8, num_heads=2):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, hidden_size // num_heads
        self.q_proj = nn.Linear(hidden_size, hidden_size)
        self.k_proj = nn.Linear(hidden_size, hidden_size)
        self.v_proj = nn.Linear(hidden_size, hidden_size)
        self.o_proj = nn.Linear(hidden_size, hidden_size)
        self.beta = nn.Parameter(torch.randn(1))
        self.M = None
        self.z = None

    def forward(self, hidden_states):
        if self.M is None:
            self.M = torch.zeros(self.num_heads, self.head_dim, self.head_dim)
            self.z = torch.zeros(self.num_heads, self.head_dim)
        bsz, q_len, _ = hidden_states.size()
        shape = (bsz, q_len, self.num_heads, self.head_dim)
        query_states = self.q_proj(hidden_states).view(shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(shape).transpose(1, 2)
        memory_output = self._retrieve_from_memory(query_states)
        self._update_memory(key_states, value_states)
        attn_output = F.scaled_dot_product_attention(query_states, key_states, value_states, is_causal=True)
        beta = torch.sigmoid(self.beta)
        combined_output = beta * memory_output + (1 - beta) * attn_output
        combined_output = combined_output.transpose(1, 2).contiguous().view(bsz, q_len, -1)
        return self.o_proj(combined_output)

    def _retrieve_from_memory(self, Q):
        M_s_1 = torch.matmul(F.elu(Q) + 1, self.M)
        Z_s_1 = torch.matmul(F.elu(Q) + 1, self.z.unsqueeze(-1)) + 1e-8
        return M_s_1 / Z_s_1

    def _update_memory(self, K, V):
        updated_M = self.M + torch.matmul((F.elu(K) + 1).transpose(-2, -1), V)
        updated_z = self.z + (F.elu(K) + 1).sum(dim=-2)
        self.M = updated_M.detach()
        self.z = updated_z.detach()


model = InfiniAttention()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
sequence = torch.randn(1, 12, 8)
target = torch.randn(1, 12, 8)
segment_length = 4

for step in range(2):
    model.M, model.z = None, None
    optimizer.zero_grad()
    for start in range(0, sequence.size(1), segment_length):
        segment = sequence[:, start:start + segment_length]
        out = model(segment)
        loss = F.mse_loss(out, target[:, start:start + segment_length])
        loss.backward()
    optimizer.step()
    print(step, loss.item())
