"""VO-Transformer (memmelma/VO-Transformer#4, https://github.com/memmelma/VO-Transformer/issues/4): in
pointnav_vo/vo/models/vo_transformer.py the action token is built with
`self.cls_token = torch.nn.Parameter(self.embed(actions).reshape(x.shape[0], 1, EMBED_DIM), requires_grad=False)`;
the reporter points out that this leaves cls_token's grad None and that the action embedding self.embed is then
never updated; the author confirms ("You are right, we don't update the action embeddings").
Why: nn.Parameter(...) wraps the embedding lookup's values in a new leaf (here with requires_grad=False), cutting
it from self.embed.weight, which is registered on the ViT and given to the optimizer but never gets a gradient.
Fix: use the embedding lookup itself as the class token (a plain tensor, not a new Parameter)."""
import types

import torch
import torch.nn.functional as F
from torch import nn

N_ACTS = 3


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, 2, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, dim * 2), nn.GELU(), nn.Linear(dim * 2, dim))

    def forward(self, x):
        y = self.norm1(x)
        x = x + self.attn(y, y, y, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class VisionTransformer(nn.Module):
    """timm's VisionTransformer in short: patch_embed, pos_embed, pos_drop, blocks, norm (its own cls_token is
    left out: forward_features below replaces it by the action token)."""

    def __init__(self, img_size=(8, 8), patch_size=4, embed_dim=16, depth=2):
        super().__init__()
        num_patches = (img_size[0] // patch_size) * (img_size[1] // patch_size)
        self.patch_embed = nn.Sequential(nn.Conv2d(3, embed_dim, patch_size, patch_size), nn.Flatten(2))
        self.pos_embed = nn.Parameter(torch.randn(1, num_patches + 1, embed_dim) * .02)
        self.pos_drop = nn.Dropout(p=0.0)
        self.blocks = nn.Sequential(*[Block(embed_dim) for _ in range(depth)])
        self.norm = nn.LayerNorm(embed_dim)


class VisualOdometryTransformerActEmbed(nn.Module):
    def __init__(self, output_dim=4, hidden_size=8, dropout_p=0.2):
        super().__init__()
        self.vit = VisionTransformer()
        self.EMBED_DIM = 16
        embed = torch.nn.Embedding(N_ACTS + 1, self.EMBED_DIM)
        self.vit.embed = embed

        def forward_features(self, x, actions, EMBED_DIM):
            x = self.patch_embed(x).transpose(1, 2)
            cls_token = self.embed(actions).reshape(x.shape[0], 1, EMBED_DIM)
            x = torch.cat((cls_token, x), dim=1)
            x = self.pos_drop(x + self.pos_embed)
            x = self.blocks(x)
            x = self.norm(x)
            return x

        self.vit.forward_features = types.MethodType(forward_features, self.vit)

        self.head = nn.Sequential(
            nn.Dropout(dropout_p), nn.Linear(self.EMBED_DIM, hidden_size), nn.GELU(),
            nn.Dropout(dropout_p), nn.Linear(hidden_size, output_dim),
        )

    def forward(self, x, actions):
        features = self.vit.forward_features(x, actions, self.EMBED_DIM)[:, 0]
        output = self.head(features)
        return output, None


torch.manual_seed(0)
model = VisualOdometryTransformerActEmbed()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
before = model.vit.embed.weight.detach().clone()
for step in range(3):
    rgb_pair = torch.randn(4, 3, 8, 8)
    actions = torch.randint(1, N_ACTS + 1, (4,))
    delta_state = torch.randn(4, 4)
    output, _ = model(rgb_pair, actions)
    loss = F.mse_loss(output, delta_state)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
print("vit.embed.weight grad:", None if model.vit.embed.weight.grad is None else "set")
print("action embedding changed:", not torch.equal(before, model.vit.embed.weight))
