# Fine-tuning a LLaMA-style model whose Attention keeps a KV cache as a plain
# tensor attribute and writes the new keys/values into it in every forward.
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

MAX_BSZ, MAX_SEQ, DIM, HEADS = 4, 16, 32, 4


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.n_heads = HEADS
        self.head_dim = DIM // HEADS
        self.wq = nn.Linear(DIM, DIM, bias=False)
        self.wk = nn.Linear(DIM, DIM, bias=False)
        self.wv = nn.Linear(DIM, DIM, bias=False)
        self.wo = nn.Linear(DIM, DIM, bias=False)
        self.cache_k = torch.zeros(MAX_BSZ, MAX_SEQ, self.n_heads, self.head_dim)
        self.cache_v = torch.zeros(MAX_BSZ, MAX_SEQ, self.n_heads, self.head_dim)

    def forward(self, x, start_pos):
        bsz, seqlen, _ = x.shape
        xq = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = self.wk(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xv = self.wv(x).view(bsz, seqlen, self.n_heads, self.head_dim)

        self.cache_k = self.cache_k.to(xq).detach()
        self.cache_v = self.cache_v.to(xq).detach()
        self.cache_k[:bsz, start_pos : start_pos + seqlen] = xk
        self.cache_v[:bsz, start_pos : start_pos + seqlen] = xv

        keys = self.cache_k[:bsz, : start_pos + seqlen]
        values = self.cache_v[:bsz, : start_pos + seqlen]

        xq = xq.transpose(1, 2)
        keys = keys.transpose(1, 2)
        values = values.transpose(1, 2)
        scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
        scores = F.softmax(scores.float(), dim=-1).type_as(xq)
        out = torch.matmul(scores, values).transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(out)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = Attention()
        self.ffn = nn.Sequential(nn.Linear(DIM, 2 * DIM), nn.SiLU(), nn.Linear(2 * DIM, DIM))

    def forward(self, x, start_pos):
        h = x + self.attention(x, start_pos)
        return h + self.ffn(h)


class Transformer(nn.Module):
    def __init__(self, vocab=50):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, DIM)
        self.layers = nn.ModuleList([Block() for _ in range(2)])
        self.output = nn.Linear(DIM, vocab, bias=False)

    def forward(self, tokens, start_pos=0):
        h = self.tok_embeddings(tokens)
        for layer in self.layers:
            h = layer(h, start_pos)
        return self.output(h)


model = Transformer()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

for step in range(3):
    tokens = torch.randint(0, 50, (MAX_BSZ, 8))
    labels = torch.randint(0, 50, (MAX_BSZ, 8))
    logits = model(tokens, start_pos=0)
    loss = F.cross_entropy(logits.reshape(-1, 50), labels.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
