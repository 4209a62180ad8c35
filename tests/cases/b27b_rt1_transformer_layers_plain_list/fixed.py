"""pytorch_robotics_transformer issue #3 "num_layers argument of the Transformer module",
https://github.com/maruya24/pytorch_robotics_transformer/issues/3: the RT-1 port keeps its transformer blocks in a
plain Python list, `self._layers = [_TransformerLayer(...) for _ in range(num_layers)]`, instead of an
nn.ModuleList. The reporter saw that raising num_layers did not raise the number of trainable parameters: the
blocks are called in forward and get gradients, but model.parameters() never lists them, so the optimizer built
from it leaves every attention and feed-forward weight at its initial value.
Fix (the maintainer's, in the thread): store the blocks in nn.ModuleList.
The model (TF-style multi-head attention, token and position embeddings, output-token head) is the repo's
transformer.py shrunk; the RT-1 image/action tokens are seeded random one-hot tokens and targets."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class TF_MultiHeadAttention(nn.Module):
    def __init__(self, heads, d_model, key_dim, dropout=0.1):
        super().__init__()
        self.h, self.key_dim = heads, key_dim
        self.q_linear = nn.Linear(d_model, heads * key_dim)
        self.k_linear = nn.Linear(d_model, heads * key_dim)
        self.v_linear = nn.Linear(d_model, heads * key_dim)
        self.dropout = nn.Dropout(dropout)
        self.out = nn.Linear(heads * key_dim, d_model)

    def forward(self, q, k, v, mask=None):
        bs = q.size(0)
        k = self.k_linear(k).view(bs, -1, self.h, self.key_dim).transpose(1, 2)
        q = self.q_linear(q).view(bs, -1, self.h, self.key_dim).transpose(1, 2)
        v = self.v_linear(v).view(bs, -1, self.h, self.key_dim).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.key_dim)
        if mask is not None:
            scores = scores.masked_fill(mask.unsqueeze(1) == 0, -1e9)
        scores = self.dropout(F.softmax(scores, dim=-1))
        concat = torch.matmul(scores, v).transpose(1, 2).contiguous().view(bs, -1, self.h * self.key_dim)
        return self.out(concat)


class _TransformerLayer(nn.Module):
    def __init__(self, layer_size=16, num_heads=2, feed_forward_size=32, dropout_rate=0.1):
        super().__init__()
        self.norm_1 = nn.LayerNorm(feed_forward_size)
        self.attn = TF_MultiHeadAttention(num_heads, feed_forward_size, layer_size, dropout=dropout_rate)
        self.ff = nn.Linear(feed_forward_size, feed_forward_size)
        self.norm_2 = nn.LayerNorm(feed_forward_size)
        self.dropout_1 = nn.Dropout(dropout_rate)

    def forward(self, x, mask):
        x1 = self.norm_1(x)
        x = x + self.attn(x1, x1, x1, mask=mask)
        y = self.norm_2(x)
        return x + self.dropout_1(self.ff(y))


class Transformer(nn.Module):
    def __init__(self, num_layers=2, layer_size=16, num_heads=2, feed_forward_size=32, dropout_rate=0.1,
                 vocab_size=16, max_seq_len=12):
        super().__init__()
        self._layers = nn.ModuleList([
            _TransformerLayer(layer_size=layer_size, num_heads=num_heads, feed_forward_size=feed_forward_size,
                              dropout_rate=dropout_rate)
            for _ in range(num_layers)
        ])
        self._token_emb = nn.Linear(vocab_size, feed_forward_size)
        self._position_emb = nn.Embedding(max_seq_len, feed_forward_size)
        self._output_tokens = nn.Linear(feed_forward_size, vocab_size)

    def forward(self, inputs, attention_mask):
        batch_size, seq_len = inputs.shape[0], inputs.shape[1]
        position_ids = torch.arange(seq_len).unsqueeze(0).tile(batch_size, 1)
        x = self._token_emb(inputs) + self._position_emb(position_ids)
        for layer in self._layers:
            x = layer(x, mask=attention_mask)
        return self._output_tokens(x)


vocab_size, seq_len, bs = 16, 12, 4
model = Transformer(num_layers=2, vocab_size=vocab_size, max_seq_len=seq_len)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
attention_mask = torch.tril(torch.ones(seq_len, seq_len)).unsqueeze(0).expand(bs, -1, -1)
tokens = torch.randint(0, vocab_size, (bs, seq_len))
inputs = F.one_hot(tokens, vocab_size).float()
targets = torch.roll(tokens, -1, dims=1)
q_before = model._layers[0].attn.q_linear.weight.detach().clone()

for step in range(5):
    optimizer.zero_grad()
    logits = model(inputs, attention_mask)
    loss = F.cross_entropy(logits.reshape(-1, vocab_size), targets.reshape(-1))
    loss.backward()
    optimizer.step()

print("trainable parameters:", sum(p.numel() for p in model.parameters() if p.requires_grad))
print("layer 0 q_linear grad is None:", model._layers[0].attn.q_linear.weight.grad is None)
print("layer 0 q_linear weight changed:", not torch.equal(q_before, model._layers[0].attn.q_linear.weight))
