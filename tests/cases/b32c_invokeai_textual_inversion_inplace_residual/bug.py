"""invoke-ai/InvokeAI issue #517, "Textual Inversion Training on M1 (works!)",
https://github.com/invoke-ai/InvokeAI/issues/517: training a textual-inversion embedding (only the placeholder
token's vector learns; the latent-diffusion UNet and the text encoder are frozen) failed in backward with
"one of the variables needed for gradient computation has been modified by an inplace operation:
[MPSFloatType [1, 4096, 320]], which is output 0 of AddBackward0, is at version 3; expected version 2".
Anomaly detection pointed into ldm/modules/attention.py's BasicTransformerBlock, at a memory "optimization" of the
fork that had turned the residual adds into in-place ones (x += self.attn1(self.norm1(x)), ...); the commenter
reverted it to x = self.attn1(self.norm1(x)) + x (the traceback then shows the reverted line). Why: after the
cross-attention add, x carries gradient back to the embedding; norm3 (LayerNorm) saves x for backward, and the
next in-place add bumps x to version 3. Fix: out-of-place residual adds. The script raises the RuntimeError."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)


class CrossAttention(nn.Module):
    def __init__(self, dim, context_dim=None):
        super().__init__()
        context_dim = context_dim or dim
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_k = nn.Linear(context_dim, dim, bias=False)
        self.to_v = nn.Linear(context_dim, dim, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x, context=None):
        context = x if context is None else context
        q, k, v = self.to_q(x), self.to_k(context), self.to_v(context)
        attn = (q @ k.transpose(1, 2) / q.shape[-1] ** 0.5).softmax(dim=-1)
        return self.to_out(attn @ v)


class BasicTransformerBlock(nn.Module):
    def __init__(self, dim=32, context_dim=16):
        super().__init__()
        self.attn1 = CrossAttention(dim)
        self.attn2 = CrossAttention(dim, context_dim)
        self.ff = nn.Sequential(nn.Linear(dim, 64), nn.GELU(), nn.Linear(64, dim))
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(dim), nn.LayerNorm(dim), nn.LayerNorm(dim)

    def forward(self, x, context=None):
        x += self.attn1(self.norm1(x))
        x += self.attn2(self.norm2(x), context=context)
        x += self.ff(self.norm3(x))  # <- inplace_saved
        return x


class TinyUNet(nn.Module):  # stands in for the frozen latent-diffusion UNet
    def __init__(self):
        super().__init__()
        self.conv_in = nn.Conv2d(4, 32, 3, padding=1)
        self.block = BasicTransformerBlock()
        self.conv_out = nn.Conv2d(32, 4, 3, padding=1)

    def forward(self, z, context):
        h = self.conv_in(z)
        b, c, hh, ww = h.shape
        x = h.flatten(2).transpose(1, 2).contiguous()  # b (h w) c
        x = self.block(x, context=context)
        return self.conv_out(x.transpose(1, 2).reshape(b, c, hh, ww))


unet = TinyUNet().requires_grad_(False)
token_embedding = nn.Embedding(10, 16).requires_grad_(False)  # frozen text-encoder vocabulary
placeholder = nn.Parameter(token_embedding.weight[3].detach().clone())  # "*" initialised from the init word
optimizer = torch.optim.AdamW([placeholder], lr=5e-3)
start = placeholder.detach().clone()
prompt_ids = torch.tensor([1, 2, 0, 4])  # "a photo of *": position 2 is the placeholder

for step in range(4):
    latents = torch.randn(1, 4, 8, 8)
    noise = torch.randn_like(latents)
    noisy = latents + 0.5 * noise
    emb = token_embedding(prompt_ids)
    context = torch.cat([emb[:2], placeholder[None], emb[3:]])[None]  # swap in the learned vector
    loss = F.mse_loss(unet(noisy, context), noise)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")

print("embedding changed:", not torch.equal(start, placeholder.detach()))
