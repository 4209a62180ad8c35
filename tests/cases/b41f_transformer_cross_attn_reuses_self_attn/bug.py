# Japanese implementation notes ("勾配が0になる問題"): after loss.backward() the encoder's
# attention weights had grad None. Cause (author's memo): in the decoder layer, the attention
# that should take the encoder output used the same attention layer (and inputs) as above.
import math
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

torch.manual_seed(0)
np.random.seed(0)


class LayerNorm(nn.Module):
    def __init__(self, features, eps=1e-6):
        super().__init__()
        self.a_2 = nn.Parameter(torch.ones(features))
        self.b_2 = nn.Parameter(torch.zeros(features))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        std = x.std(-1, keepdim=True)
        return self.a_2 * (x - mean) / (std + self.eps) + self.b_2


class FeedForward(nn.Module):
    def __init__(self, d, hid_dim=32):
        super().__init__()
        self.l1 = nn.Linear(d, hid_dim)
        self.l2 = nn.Linear(hid_dim, d)

    def forward(self, x):
        return self.l2(F.relu(self.l1(x)))


def attention(query, key, value, mask=None):
    d_k = key.shape[-1]
    scale = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scale = scale.masked_fill(mask == 0, -1e9)
    atn = F.softmax(scale, dim=-1)
    return torch.matmul(atn, value)


class MultiHeadAttention(nn.Module):
    def __init__(self, h, d):
        super().__init__()
        self.d_m_atn = d // h
        self.h = h
        self.linear_q = nn.Linear(d, d)
        self.linear_k = nn.Linear(d, d)
        self.linear_v = nn.Linear(d, d)
        self.linear_last = nn.Linear(d, d)

    def forward(self, query, key, value, mask=None):
        n_batch = query.shape[0]
        m_q = self.linear_q(query).reshape(n_batch, -1, self.h, self.d_m_atn).transpose(1, 2)
        m_k = self.linear_k(key).reshape(n_batch, -1, self.h, self.d_m_atn).transpose(1, 2)
        m_v = self.linear_v(value).reshape(n_batch, -1, self.h, self.d_m_atn).transpose(1, 2)
        z = []
        for i in range(self.h):
            z.append(attention(m_q[:, i], m_k[:, i], m_v[:, i], mask))
        z = torch.cat(z, 2)
        return self.linear_last(z)


class EncoderLayer(nn.Module):
    def __init__(self, d_model, h):
        super().__init__()
        self.multi_attention = MultiHeadAttention(h, d_model)
        self.feedforward = FeedForward(d_model)
        self.layer_norm_1 = LayerNorm(d_model)
        self.layer_norm_2 = LayerNorm(d_model)

    def forward(self, x):
        out = self.layer_norm_1(x + self.multi_attention(x, x, x))
        return self.layer_norm_2(out + self.feedforward(out))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, h):
        super().__init__()
        self.masked_multi_attention = MultiHeadAttention(h, d_model)
        self.multi_attention = MultiHeadAttention(h, d_model)
        self.feedforward = FeedForward(d_model)
        self.layer_norm_1 = LayerNorm(d_model)
        self.layer_norm_2 = LayerNorm(d_model)
        self.layer_norm_3 = LayerNorm(d_model)

    def forward(self, x, memory, mask):
        out = self.masked_multi_attention(x, x, x, mask)
        out = self.layer_norm_1(x + out)
        res = out
        out = self.masked_multi_attention(out, out, out, mask)  # <- unused_parameter
        out = self.layer_norm_2(res + out)
        res = out
        out = self.feedforward(out)
        return self.layer_norm_3(res + out)


class EncoderDecoder(nn.Module):
    def __init__(self, d_model, N, h):
        super().__init__()
        self.encoder = nn.ModuleList([EncoderLayer(d_model, h) for _ in range(N)])
        self.decoder = nn.ModuleList([DecoderLayer(d_model, h) for _ in range(N)])

    def forward(self, x_emb, y_emb, mask):
        z = x_emb
        for layer in self.encoder:
            z = layer(z)
        y = y_emb
        for layer in self.decoder:
            y = layer(y, z, mask)
        return y


class Model(nn.Module):
    def __init__(self, d_model, vocab_num, N, h):
        super().__init__()
        self.emb_x = nn.Embedding(vocab_num, d_model)
        self.emb_y = nn.Embedding(vocab_num, d_model)
        self.enc_dec = EncoderDecoder(d_model, N, h)
        self.gen = nn.Linear(d_model, vocab_num)

    def forward(self, x, y, mask):
        out = self.enc_dec(self.emb_x(x), self.emb_y(y), mask)
        return self.gen(out)


vocab_num, word_len, batch = 10, 6, 4
transformer = Model(16, vocab_num, 2, 2)
criterion = nn.CrossEntropyLoss()
optimizer = optim.Adam(transformer.parameters(), lr=1e-3)

data = torch.LongTensor(np.random.randint(1, vocab_num - 1, size=(batch, word_len)))
data[:, 0] = vocab_num - 1
src, tgt = data[:, 1:], data
mask = torch.tril(torch.ones(word_len, word_len))

optimizer.zero_grad()
out = transformer(src, tgt, mask)
loss = sum(criterion(out[i, :-1], src[i]) for i in range(batch)) / batch
loss.backward()
optimizer.step()
print("loss", loss.item())
print("gen.weight.grad is None:", transformer.gen.weight.grad is None)
print("encoder[0] linear_q grad:", transformer.enc_dec.encoder[0].multi_attention.linear_q.weight.grad)
