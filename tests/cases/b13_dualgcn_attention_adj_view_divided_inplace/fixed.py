"""The fixed twin: the head average is divided out of place, `adj_ag = adj_ag / self.attention_heads`
(CCChenhao997/DualGCN-ABSA#4)."""
import math
import torch
import torch.nn.functional as F
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, h, d_model):
        super().__init__()
        self.d_k, self.h = d_model // h, h
        self.linears = nn.ModuleList([nn.Linear(d_model, d_model) for _ in range(2)])

    def forward(self, query, key):
        n = query.size(0)
        query, key = [l(x).view(n, -1, self.h, self.d_k).transpose(1, 2) for l, x in zip(self.linears, (query, key))]
        return F.softmax(query @ key.transpose(-2, -1) / math.sqrt(self.d_k), dim=-1)


class SemGCN(nn.Module):
    def __init__(self, dim=16, attention_heads=1, n_class=3):
        super().__init__()
        self.attention_heads = attention_heads
        self.embed = nn.Embedding(50, dim)
        self.attn = MultiHeadAttention(attention_heads, dim)
        self.W = nn.Linear(dim, dim)
        self.classifier = nn.Linear(dim, n_class)

    def forward(self, tokens):
        gcn_inputs = self.embed(tokens)
        attn_tensor = self.attn(gcn_inputs, gcn_inputs)
        attn_adj_list = [attn_adj.squeeze(1) for attn_adj in torch.split(attn_tensor, 1, dim=1)]
        adj_ag = None
        for i in range(self.attention_heads):
            if adj_ag is None:
                adj_ag = attn_adj_list[i]
            else:
                adj_ag = adj_ag + attn_adj_list[i]
        adj_ag = adj_ag / self.attention_heads
        denom_ag = adj_ag.sum(2).unsqueeze(2) + 1
        outputs_ag = F.relu(self.W(adj_ag.bmm(gcn_inputs)) / denom_ag)
        return self.classifier(outputs_ag.mean(1))


torch.manual_seed(0)
model = SemGCN()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
tokens, polarity = torch.randint(0, 50, (4, 7)), torch.randint(0, 3, (4,))
for step in range(2):
    loss = F.cross_entropy(model(tokens), polarity)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}, attn grad set: {model.attn.linears[0].weight.grad is not None}")
