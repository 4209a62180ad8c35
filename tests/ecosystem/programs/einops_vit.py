"""A small ViT written with einops as lucidrains' vit-pytorch does: Rearrange patch embedding inside an
nn.Sequential, the cls token and positional embedding as nn.Parameter, attention with rearrange and
einsum, a Reduce('b n d -> b d', 'mean') head option, and einops.repeat for the cls tokens."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from einops import rearrange, repeat
from einops.layers.torch import Rearrange, Reduce


class Attention(nn.Module):
    def __init__(self, dim, heads=2, dim_head=8):
        super().__init__()
        inner = heads * dim_head
        self.heads, self.scale = heads, dim_head ** -0.5
        self.norm = nn.LayerNorm(dim)
        self.to_qkv = nn.Linear(dim, inner * 3, bias=False)
        self.to_out = nn.Linear(inner, dim)

    def forward(self, x):
        x = self.norm(x)
        q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=self.heads), self.to_qkv(x).chunk(3, dim=-1))
        attn = torch.einsum("bhid,bhjd->bhij", q, k).mul(self.scale).softmax(dim=-1)
        out = torch.einsum("bhij,bhjd->bhid", attn, v)
        return self.to_out(rearrange(out, "b h n d -> b n (h d)"))


class ViT(nn.Module):
    def __init__(self, image_size=16, patch=4, dim=32, depth=2, num_classes=5, pool="cls"):
        super().__init__()
        patch_dim = 3 * patch * patch
        self.to_patch_embedding = nn.Sequential(
            Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=patch, p2=patch),
            nn.LayerNorm(patch_dim), nn.Linear(patch_dim, dim), nn.LayerNorm(dim))
        num_patches = (image_size // patch) ** 2
        self.pos_embedding = nn.Parameter(torch.randn(1, num_patches + 1, dim))
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim))
        self.layers = nn.ModuleList([Attention(dim) for _ in range(depth)])
        self.pool = pool
        self.mean_pool = Reduce("b n d -> b d", "mean")
        self.mlp_head = nn.Linear(dim, num_classes)

    def forward(self, img):
        x = self.to_patch_embedding(img)
        cls_tokens = repeat(self.cls_token, "1 1 d -> b 1 d", b=x.shape[0])
        x = torch.cat((cls_tokens, x), dim=1) + self.pos_embedding
        for attn in self.layers:
            x = attn(x) + x
        x = self.mean_pool(x) if self.pool == "mean" else x[:, 0]
        return self.mlp_head(x)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = ViT()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)
    for step in range(3):
        img, label = torch.randn(4, 3, 16, 16), torch.randint(0, 5, (4,))
        loss = F.cross_entropy(model(img), label)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
