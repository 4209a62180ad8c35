"""The Transformer of graykode/nlp-tutorial (graykode/nlp-tutorial#29): the multi-head attention creates its output
projection and LayerNorm inside forward, nn.Linear(n_heads * d_v, d_model)(context), so every call uses fresh random
weights that are not in model.parameters(); the layer is never trained and the output is noise from a new layer at
each step."""
import torch
import torch.nn.functional as F
from torch import nn

d_model, d_k, n_heads = 16, 4, 2


class MultiHeadAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.W_Q = nn.Linear(d_model, d_k * n_heads)
        self.W_K = nn.Linear(d_model, d_k * n_heads)
        self.W_V = nn.Linear(d_model, d_k * n_heads)

    def forward(self, Q, K, V):
        residual, batch_size = Q, Q.size(0)
        q_s = self.W_Q(Q).view(batch_size, -1, n_heads, d_k).transpose(1, 2)
        k_s = self.W_K(K).view(batch_size, -1, n_heads, d_k).transpose(1, 2)
        v_s = self.W_V(V).view(batch_size, -1, n_heads, d_k).transpose(1, 2)
        attn = torch.softmax(q_s @ k_s.transpose(-1, -2) / d_k ** 0.5, dim=-1)
        context = (attn @ v_s).transpose(1, 2).contiguous().view(batch_size, -1, n_heads * d_k)
        output = nn.Linear(n_heads * d_k, d_model)(context)  # <- module_in_forward
        return nn.LayerNorm(d_model)(output + residual)


torch.manual_seed(0)
attention = MultiHeadAttention()
head = nn.Linear(d_model, 5)
optimizer = torch.optim.Adam(list(attention.parameters()) + list(head.parameters()), lr=1e-2)
enc_inputs, targets = torch.randn(8, 5, d_model), torch.randint(0, 5, (8, 5))
for epoch in range(20):
    enc_outputs = attention(enc_inputs, enc_inputs, enc_inputs)
    loss = F.cross_entropy(head(enc_outputs).view(-1, 5), targets.view(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if epoch % 5 == 0:
        print(f"epoch {epoch}: loss {loss.item():.4f}")
