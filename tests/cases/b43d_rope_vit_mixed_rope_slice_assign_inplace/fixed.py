# RoPE-ViT style attention with learned "mixed" 2D rotary frequencies: the
# rotated query/key patch tokens are written back into slices of q and k,
# skipping the CLS token at position 0.
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def init_2d_freqs(dim, num_heads, theta=10.0, rotate=True):
    freqs_x, freqs_y = [], []
    mag = 1 / (theta ** (torch.arange(0, dim, 4)[: (dim // 4)].float() / dim))
    for i in range(num_heads):
        angles = torch.rand(1) * 2 * torch.pi if rotate else torch.zeros(1)
        freqs_x.append(torch.cat([mag * torch.cos(angles), mag * torch.cos(torch.pi / 2 + angles)], dim=-1))
        freqs_y.append(torch.cat([mag * torch.sin(angles), mag * torch.sin(torch.pi / 2 + angles)], dim=-1))
    return torch.stack([torch.stack(freqs_x, dim=0), torch.stack(freqs_y, dim=0)], dim=0)


def init_t_xy(end_x, end_y):
    t = torch.arange(end_x * end_y, dtype=torch.float32)
    return (t % end_x).float(), torch.div(t, end_x, rounding_mode="floor").float()


def compute_mixed_cis(freqs, t_x, t_y, num_heads):
    N = t_x.shape[0]
    freqs_x = (t_x.unsqueeze(-1) @ freqs[0].unsqueeze(-2)).view(N, num_heads, -1).permute(1, 0, 2)
    freqs_y = (t_y.unsqueeze(-1) @ freqs[1].unsqueeze(-2)).view(N, num_heads, -1).permute(1, 0, 2)
    return torch.polar(torch.ones_like(freqs_x), freqs_x + freqs_y)


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = freqs_cis.unsqueeze(0)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


class RoPEAttention(nn.Module):
    def __init__(self, dim, num_heads=2, grid=4, rope_theta=10.0):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=False)
        self.proj = nn.Linear(dim, dim)
        freqs = init_2d_freqs(dim // num_heads, num_heads, theta=rope_theta).view(2, -1)
        self.freqs = nn.Parameter(freqs, requires_grad=True)
        t_x, t_y = init_t_xy(grid, grid)
        self.register_buffer("freqs_t_x", t_x)
        self.register_buffer("freqs_t_y", t_y)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        freqs_cis = compute_mixed_cis(self.freqs, self.freqs_t_x, self.freqs_t_y, self.num_heads)
        q_rope, k_rope = apply_rotary_emb(q[:, :, 1:], k[:, :, 1:], freqs_cis=freqs_cis)
        q = torch.cat((q[:, :, :1], q_rope), dim=2)
        k = torch.cat((k[:, :, :1], k_rope), dim=2)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        return self.proj(x)


class TinyRoPEViT(nn.Module):
    def __init__(self, dim=16, grid=4, patch=4, num_classes=10):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, dim, patch, patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.norm1 = nn.LayerNorm(dim)
        self.attn = RoPEAttention(dim, grid=grid)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        self.head = nn.Linear(dim, num_classes)

    def forward(self, img):
        x = self.patch_embed(img).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1)
        x = x + self.attn(self.norm1(x))
        x = x + self.mlp(self.norm2(x))
        return self.head(x[:, 0])


model = TinyRoPEViT()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
images = torch.randn(8, 3, 16, 16)
labels = torch.randint(0, 10, (8,))

for step in range(3):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(images), labels)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f} rope freqs grad norm {model.attn.freqs.grad.norm():.4f}")
