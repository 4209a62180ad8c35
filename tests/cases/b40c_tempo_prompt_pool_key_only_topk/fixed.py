"""TEMPO (GPT-2 prompt pool for time series) in liaoyuhua/tempo-pytorch (issue #1, "loss of prompt pool"): the
prompt pool scores each component's embedding against `prompt_key`, keeps the top-k indices and returns the
matching `prompt_value` rows, but no key-matching loss is computed, unlike the official L2P prompt pool: the keys
reach the loss only through topk's integer indices, so `prompt_key` gets no gradient and never learns which prompt
to pick. The maintainer acknowledged it; the fix keeps the selected similarities (L2P's `reduce_sim`) and pulls
them up in the loss, `loss - coeff * reduce_sim`. A tiny frozen transformer block stands in for GPT-2."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)


class Prompt(nn.Module):
    def __init__(self, prompt_length=2, pool_size=6, embed_dim=16, top_k=2):
        super().__init__()
        self.top_k = top_k
        self.prompt_key = nn.init.uniform_(nn.Parameter(torch.randn(pool_size, embed_dim)), -1, 1)
        self.prompt_value = nn.init.uniform_(nn.Parameter(torch.randn(pool_size, prompt_length, embed_dim)), -1, 1)

    def forward(self, x):  # x: B, N, P, E
        x = torch.mean(x, dim=2)  # B, N, E
        similarity = torch.matmul(x, self.prompt_key.T)  # B, N, Pool_size
        sim_topk, idx = torch.topk(similarity, self.top_k, dim=-1)
        reduce_sim = sim_topk.sum() / x.shape[0]  # L2P's key-matching term
        return self.prompt_value[idx], reduce_sim  # B, N, top_k, P, E


class Attention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        att = torch.softmax(q @ k.transpose(-2, -1) / (C // self.n_head) ** 0.5, dim=-1)
        return self.c_proj((att @ v).transpose(1, 2).reshape(B, T, C))


class Block(nn.Module):  # GPT-2 block
    def __init__(self, n_embd, n_head=4):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.attn = Attention(n_embd, n_head)
        self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(n_embd, 4 * n_embd), c_proj=nn.Linear(4 * n_embd, n_embd)))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x))))


class TEMPO(nn.Module):
    def __init__(self, num_series=3, input_len=16, pred_len=4, patch_size=4, n_embd=16):
        super().__init__()
        self.patch_size, self.num_series = patch_size, num_series
        self.patch_num = input_len // patch_size
        self.promp_pool = Prompt(embed_dim=n_embd)
        self.wte = nn.Linear(patch_size, n_embd)  # patch embedding
        self.enc_inp_len = (self.patch_num + 2 * 2) * num_series
        self.wpe = nn.Embedding(self.enc_inp_len, n_embd)
        self.h = nn.ModuleList([Block(n_embd) for _ in range(2)])
        self.head = nn.Linear(n_embd * self.patch_num, pred_len)
        # freeze the multihead attention and feedforward layers of the pretrained LM
        for n, p in self.named_parameters():
            if any(k in n for k in ["attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"]):
                p.requires_grad = False

    def forward(self, x):  # B, N, L
        x = x.unfold(dimension=-1, size=self.patch_size, step=self.patch_size)  # B, N, P, PS
        x_emb = self.wte(x)  # B, N, P, E
        x_prompt, reduce_sim = self.promp_pool(x_emb)
        B, N, top_k, prompt_len, E = x_prompt.shape
        x_emb = torch.cat([x_emb, x_prompt.reshape(B, N, top_k * prompt_len, E)], dim=2)
        h = x_emb.view(B, -1, E) + self.wpe(torch.arange(self.enc_inp_len))
        for block in self.h:
            h = block(h)
        h = h.view(B, N, -1, E)[:, :, : self.patch_num, :]
        out = self.head(h.flatten(2))  # B, N, Y
        return out.sum(dim=1, keepdim=True), reduce_sim


model = TEMPO()
optimizer = torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), lr=1e-2)
x, y = torch.randn(8, 3, 16), torch.randn(8, 1, 4)
key_before = model.promp_pool.prompt_key.detach().clone()
for step in range(3):
    optimizer.zero_grad()
    pred, reduce_sim = model(x)
    loss = F.l1_loss(pred, y) - 0.1 * reduce_sim
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
print("prompt_value grad is None:", model.promp_pool.prompt_value.grad is None)
print("prompt_key grad:", model.promp_pool.prompt_key.grad)
print("prompt_key changed:", not torch.equal(key_before, model.promp_pool.prompt_key))
