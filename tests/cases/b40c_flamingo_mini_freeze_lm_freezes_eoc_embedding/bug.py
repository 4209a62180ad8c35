"""flamingo-mini (dhansmair/flamingo-mini#2, "parameters_trainable() and state_dict_trainable() do not include the
token embedding matrix"): FlamingoGPT2 resizes GPT-2's token embeddings by one row for the new <EOC> token, then
`freeze_lm()` sets requires_grad = False on every parameter of the language model, the token embedding matrix
included, and re-enables only the gated cross-attention blocks. `parameters_trainable()` (the optimizer's list)
filters on requires_grad, so the <EOC> embedding never gets a gradient and keeps its random init: "the special token
<EOC> is added to the embeddings, but the embedding is not learned". The fix: freeze_lm() re-enables
`self.lm.wte.weight.requires_grad = True` after freezing the LM (the tied lm_head shares that weight).
A tiny GPT-2 in plain torch stands in for the pretrained one; random tensors stand in for CLIP features."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)

VOCAB, DIM, DIM_VISUAL = 40, 16, 12


class GPT2Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.c_attn, self.c_proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.c_attn(self.ln_1(x)).split(x.shape[-1], dim=-1)
        att = (q @ k.transpose(1, 2)) / x.shape[-1] ** 0.5
        att = att.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
        x = x + self.c_proj(torch.softmax(att, -1) @ v)
        return x + self.mlp(self.ln_2(x))


class GPT2Model(nn.Module):
    def __init__(self, vocab, dim, n_layer=2):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, dim), nn.Embedding(32, dim)
        self.h = nn.ModuleList([GPT2Block(dim) for _ in range(n_layer)])

    def resize_token_embeddings(self, new_num):
        old = self.wte
        self.wte = nn.Embedding(new_num, old.embedding_dim)
        with torch.no_grad():
            self.wte.weight[: old.num_embeddings] = old.weight


class GatedXAttn(nn.Module):
    def __init__(self, dim, dim_visual):
        super().__init__()
        self.to_kv = nn.Linear(dim_visual, 2 * dim)
        self.attn_gate = nn.Parameter(torch.tensor([0.1]))

    def forward(self, y, visual):
        k, v = self.to_kv(visual).chunk(2, dim=-1)
        att = torch.softmax(y @ k.transpose(1, 2) / y.shape[-1] ** 0.5, -1)
        return y + torch.tanh(self.attn_gate) * (att @ v)


class ModifiedLMBlock(nn.Module):
    def __init__(self, lm_block, dim, dim_visual):
        super().__init__()
        self.lm_block, self.xattn_block = lm_block, GatedXAttn(dim, dim_visual)

    def forward(self, y, visual):
        return self.lm_block(self.xattn_block(y, visual))


class FlamingoGPT2(nn.Module):
    def __init__(self):
        super().__init__()
        self.lm = GPT2Model(VOCAB, DIM)
        self.lm.resize_token_embeddings(VOCAB + 1)  # + <EOC>
        self.lm_head = nn.Linear(DIM, VOCAB + 1, bias=False)
        self.lm_head.weight = self.lm.wte.weight  # tied, as GPT2LMHeadModel
        self.modified_layers = nn.ModuleList([ModifiedLMBlock(b, DIM, DIM_VISUAL) for b in self.lm.h])

    def freeze_lm(self):
        for param in self.lm.parameters():
            param.requires_grad = False  # <- no_update
        for xattn in self.modified_layers:
            for param in xattn.xattn_block.parameters():
                param.requires_grad = True

    def parameters_trainable(self):
        return filter(lambda p: p.requires_grad, self.parameters())

    def forward(self, input_ids, visual_features, labels):
        y = self.lm.wte(input_ids) + self.lm.wpe(torch.arange(input_ids.shape[1]))
        for layer in self.modified_layers:
            y = layer(y, visual_features)
        logits = self.lm_head(y)
        return F.cross_entropy(logits[:, :-1].reshape(-1, VOCAB + 1), labels[:, 1:].reshape(-1))


model = FlamingoGPT2()
model.freeze_lm()
optimizer = torch.optim.AdamW(model.parameters_trainable(), lr=1e-2)
EOC = VOCAB
captions = torch.randint(0, VOCAB, (8, 10))
captions[:, -1] = EOC  # every caption ends with <EOC>
visual = torch.randn(8, 5, DIM_VISUAL)
eoc_before = model.lm.wte.weight[EOC].detach().clone()
for step in range(3):
    loss = model(captions, visual, labels=captions)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
print("wte.weight.grad:", model.lm.wte.weight.grad)
print("<EOC> embedding learned:", not torch.equal(eoc_before, model.lm.wte.weight[EOC]))
