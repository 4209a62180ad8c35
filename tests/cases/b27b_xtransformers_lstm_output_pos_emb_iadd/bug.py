"""x-transformers PR #55 "eliminate inplace operations", https://github.com/lucidrains/x-transformers/pull/55:
the author stacks a ContinuousTransformerWrapper (Encoder, dim 64, one layer, 4 heads) on top of an nn.LSTM and
`loss.backward()` raises "one of the variables needed for gradient computation has been modified by an inplace
operation: [10, 20, 64], which is output 0 of CudnnRnnBackward, is at version 1". The LSTM saves its output for
its backward; the wrapper's forward (project_in is an Identity when dim_in is not given) adds the absolute
positional embedding in place, `x += self.pos_emb(x)`, so the LSTM's saved output is overwritten.
Fix (the PR, merged): replace the in-place ops with out-of-place ones, `x = x + self.pos_emb(x)`.
The wrapper, its positional embedding and a pre-norm attention block are rebuilt in plain torch; an Adam step over
a few random batches replaces the report's single `m(x).sum().backward()` (the error comes at the first one)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class AbsolutePositionalEmbedding(nn.Module):
    def __init__(self, dim, max_seq_len):
        super().__init__()
        self.emb = nn.Embedding(max_seq_len, dim)

    def forward(self, x):
        n = torch.arange(x.shape[1], device=x.device)
        return self.emb(n)[None, :, :]


class Attention(nn.Module):
    def __init__(self, dim, heads=4):
        super().__init__()
        self.heads = heads
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(b, n, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        attn = (q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5).softmax(dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(b, n, d)
        return self.to_out(out)


class Encoder(nn.Module):
    def __init__(self, dim, depth, heads):
        super().__init__()
        self.layers = nn.ModuleList()
        for _ in range(depth):
            self.layers.append(nn.ModuleList([nn.LayerNorm(dim), Attention(dim, heads),
                                              nn.LayerNorm(dim), nn.Sequential(nn.Linear(dim, dim * 4), nn.GELU(), nn.Linear(dim * 4, dim))]))

    def forward(self, x):
        for norm1, attn, norm2, ff in self.layers:
            x = attn(norm1(x)) + x
            x = ff(norm2(x)) + x
        return x


class ContinuousTransformerWrapper(nn.Module):
    def __init__(self, max_seq_len, attn_layers, dim, dim_in=None, dim_out=None):
        super().__init__()
        self.pos_emb = AbsolutePositionalEmbedding(dim, max_seq_len)
        self.project_in = nn.Linear(dim_in, dim) if dim_in is not None else nn.Identity()
        self.attn_layers = attn_layers
        self.norm = nn.LayerNorm(dim)
        self.project_out = nn.Linear(dim, dim_out) if dim_out is not None else nn.Identity()

    def forward(self, x):
        x = self.project_in(x)
        x += self.pos_emb(x)  # <- inplace_saved
        x = self.attn_layers(x)
        x = self.norm(x)
        return self.project_out(x)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(input_size=64, hidden_size=64, num_layers=1, bidirectional=False, batch_first=True)
        self.transformer = ContinuousTransformerWrapper(max_seq_len=100, attn_layers=Encoder(dim=64, depth=1, heads=4), dim=64)

    def forward(self, x):
        x, _ = self.rnn(x)
        x = self.transformer(x)
        return x


m = Model()
optimizer = torch.optim.Adam(m.parameters(), lr=1e-3)
batches = [(torch.randn(10, 20, 64), torch.randn(10, 20, 64)) for _ in range(3)]
w_before = m.rnn.weight_ih_l0.detach().clone()

for x, y in batches:
    optimizer.zero_grad()
    loss = F.mse_loss(m(x), y)
    loss.backward()
    optimizer.step()

print("lstm weight_ih_l0 changed:", not torch.equal(w_before, m.rnn.weight_ih_l0))
