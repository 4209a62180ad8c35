"""MiniMind issue #858 "num_experts_per_tok=1 MoE router receives no gradient (top-k weight normalisation
degenerates to a constant)", https://github.com/jingyaogong/minimind/issues/858, fixed by pull request #859.
With the default MoE config (num_experts=4, num_experts_per_tok=1, norm_topk_prob=True) the reporter's MoE
model trained worse than the dense one and its experts never specialised. MOEFeedForward divides the top-k
weight by its own sum; with k=1 that is x / x = 1.0 for every token, so the only differentiable path from the
LM loss to the router (`gate`) is a constant: gate.weight gets (numerically) no gradient from the LM loss.
PR #859 verified this with router_aux_loss_coef=0 ("so only the LM path can contribute a gradient"), as here.
Fix (PR #859, "keep the MoE router trainable at num_experts_per_tok=1"): do not normalise a single selected
weight (its table: k=1 without normalisation gives the gate a 1e-2 gradient); normalise only when k > 1.
Shrunk MiniMind: 2 blocks, hidden 32, vocab 64, plain causal attention."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Config:
    hidden_size, num_hidden_layers, vocab_size, num_attention_heads = 32, 2, 64, 4
    num_experts, num_experts_per_tok, moe_intermediate_size = 4, 1, 64
    norm_topk_prob, router_aux_loss_coef = True, 0.0


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


class FeedForward(nn.Module):
    def __init__(self, config, intermediate_size):
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, intermediate_size, bias=False)
        self.down_proj = nn.Linear(intermediate_size, config.hidden_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, intermediate_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class MOEFeedForward(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.gate = nn.Linear(config.hidden_size, config.num_experts, bias=False)
        self.experts = nn.ModuleList([FeedForward(config, config.moe_intermediate_size)
                                      for _ in range(config.num_experts)])

    def forward(self, x):
        batch_size, seq_len, hidden_dim = x.shape
        x_flat = x.view(-1, hidden_dim)
        scores = F.softmax(self.gate(x_flat), dim=-1)
        topk_weight, topk_idx = torch.topk(scores, k=self.config.num_experts_per_tok, dim=-1, sorted=False)
        if self.config.norm_topk_prob and self.config.num_experts_per_tok > 1: topk_weight = topk_weight / (topk_weight.sum(dim=-1, keepdim=True) + 1e-20)
        y = torch.zeros_like(x_flat)
        for i, expert in enumerate(self.experts):
            mask = (topk_idx == i)
            if mask.any():
                token_idx = mask.any(dim=-1).nonzero().flatten()
                weight = topk_weight[mask].view(-1, 1)
                y.index_add_(0, token_idx, (expert(x_flat[token_idx]) * weight).to(y.dtype))
        if self.training and self.config.router_aux_loss_coef > 0:
            load = F.one_hot(topk_idx, self.config.num_experts).float().mean(0)
            self.aux_loss = (load * scores.mean(0)).sum() * self.config.num_experts * self.config.router_aux_loss_coef
        else:
            self.aux_loss = scores.new_zeros(1).squeeze()
        return y.view(batch_size, seq_len, hidden_dim)


class MiniMindBlock(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n_heads, self.head_dim = config.num_attention_heads, config.hidden_size // config.num_attention_heads
        self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size, bias=False)
        self.o_proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self.input_layernorm = RMSNorm(config.hidden_size)
        self.post_attention_layernorm = RMSNorm(config.hidden_size)
        self.mlp = MOEFeedForward(config)

    def forward(self, h):
        b, t, d = h.shape
        q, k, v = self.qkv(self.input_layernorm(h)).view(b, t, 3, self.n_heads, self.head_dim).unbind(2)
        att = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        h = h + self.o_proj(att.transpose(1, 2).reshape(b, t, d))
        return h + self.mlp(self.post_attention_layernorm(h))


class MiniMindForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList([MiniMindBlock(config) for _ in range(config.num_hidden_layers)])
        self.norm = RMSNorm(config.hidden_size)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.embed_tokens.weight = self.lm_head.weight

    def forward(self, input_ids, labels):
        h = self.embed_tokens(input_ids)
        for layer in self.layers:
            h = layer(h)
        logits = self.lm_head(self.norm(h))
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), labels[:, 1:].reshape(-1))
        aux_loss = sum(l.mlp.aux_loss for l in self.layers)
        return loss, aux_loss


model = MiniMindForCausalLM(Config())
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4)
gate = model.layers[0].mlp.gate
for step in range(6):
    input_ids = torch.randint(0, 64, (4, 16))
    loss, aux_loss = model(input_ids, labels=input_ids)
    loss = loss + aux_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

print("router gate.weight.grad norm (LM loss only):", gate.weight.grad.norm().item())
print("expert FFN grad norm:", model.layers[0].mlp.experts[0].up_proj.weight.grad.norm().item())
