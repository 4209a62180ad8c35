"""MAE-DFER (sunlicai/MAE-DFER#15, https://github.com/sunlicai/MAE-DFER/issues/15): fine-tuning with the
local_global attention on torch 2.0 fails in backward with "RuntimeError: one of the variables needed for gradient
computation has been modified by an inplace operation: [torch.cuda.FloatTensor [4, 8, 512]], which is output 0 of
AsStridedBackward0, is at version 2; expected version 0 instead".
Why: LGBlock.forward takes the messenger tokens as rearrange(x[:,0], '(b n) c -> b n c'), a view of x, and
second_attn_norm0 (LayerNorm) saves that view for backward; four lines later x[:,0] = ... writes the updated tokens
back into x in place, so the saved view has changed when backward runs.
Fix (the reporter's, adopted upstream): copy the tokens out of x, rearrange(x[:,0].clone(), ...). (Writing x
back out of place would also do; the report changed the read.)"""
import torch
from torch import nn


def rearrange(t, pattern, **sizes):
    """einops.rearrange for the three patterns this block uses (a reshape: a view whenever the strides allow)."""
    if pattern == '(b n) c -> b n c':
        return t.reshape(sizes['b'], -1, t.shape[-1])
    if pattern == 'b n c -> (b n) c':
        return t.reshape(-1, t.shape[-1])
    if pattern == '(b n) s c -> b (n s) c':
        return t.reshape(sizes['b'], -1, t.shape[-1])
    if pattern == 'b (n s) c -> (b n) s c':
        return t.reshape(t.shape[0] * sizes['n'], -1, t.shape[-1])
    raise ValueError(pattern)


class GeneralAttention(nn.Module):
    def __init__(self, dim, num_heads=2):
        super().__init__()
        self.num_heads = num_heads
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, context=None):
        context = x if context is None else context
        B, N, C = x.shape
        q = self.q(x).reshape(B, N, self.num_heads, -1).transpose(1, 2)
        k, v = self.kv(context).reshape(B, context.shape[1], 2, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        attn = (q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5).softmax(dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(B, N, C))


class LGBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.first_attn_norm0 = nn.LayerNorm(dim)
        self.first_attn = GeneralAttention(dim)
        self.second_attn_norm0 = nn.LayerNorm(dim)
        self.second_attn = GeneralAttention(dim)
        self.third_attn_norm0 = nn.LayerNorm(dim)
        self.third_attn_norm1 = nn.LayerNorm(dim)
        self.third_attn = GeneralAttention(dim)
        self.drop_path = nn.Identity()
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x, b):
        bn = x.shape[0]
        n = bn // b # number of local regions
        ## perform local (intra-region) self-attention
        x = x + self.drop_path(self.first_attn(self.first_attn_norm0(x)))

        ## perform global (inter-region) self-attention
        messenger_tokens = rearrange(x[:,0].clone(), '(b n) c -> b n c', b=b) # attn on 'n' dim
        messenger_tokens = messenger_tokens + self.drop_path(
            self.second_attn(self.second_attn_norm0(messenger_tokens))
        )
        x[:,0] = rearrange(messenger_tokens, 'b n c -> (b n) c')

        ## perform local-global interaction
        local_tokens = rearrange(x[:,1:], '(b n) s c -> b (n s) c', b=b)# NOTE: n merges into s (not b), (B, N*(S-1), D)
        local_tokens = local_tokens + self.drop_path(
            self.third_attn(
                self.third_attn_norm0(local_tokens), # (b, n*(s-1), c)
                context=self.third_attn_norm1(messenger_tokens) # (b, n*1, c)
            )
        )
        x[:,1:] = rearrange(local_tokens, 'b (n s) c -> (b n) s c', n=n)

        # FFN layer
        x = x + self.drop_path(self.mlp(self.norm2(x)))
        return x


torch.manual_seed(0)
b, n, s, c = 2, 4, 5, 16
block = LGBlock(c)
head = nn.Linear(c, 7)
optimizer = torch.optim.AdamW(list(block.parameters()) + list(head.parameters()), lr=1e-3)
tokens, labels = torch.randn(b * n, s, c), torch.tensor([3, 5])
before = block.second_attn.q.weight.detach().clone()
for step in range(3):
    x = block(tokens, b)
    logits = head(x.reshape(b, n * s, c).mean(dim=1))
    loss = nn.functional.cross_entropy(logits, labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss={loss.item():.4f}")
print("second_attn changed:", not torch.equal(before, block.second_attn.q.weight))
