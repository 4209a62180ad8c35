"""The fixed twin (Project-MONAI/MONAI#3475): the unused cls_token is removed from PatchEmbeddingBlock; the ViT's
own cls_token is the one prepended, and every parameter now takes part in the loss."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class PatchEmbeddingBlock(nn.Module):
    def __init__(self, in_channels, img_size, patch_size, hidden_size, dropout_rate=0.0):
        super().__init__()
        n_patches = (img_size // patch_size) ** 3
        self.patch_embeddings = nn.Conv3d(in_channels, hidden_size, kernel_size=patch_size, stride=patch_size)
        self.position_embeddings = nn.Parameter(torch.zeros(1, n_patches, hidden_size))
        self.dropout = nn.Dropout(dropout_rate)
        nn.init.trunc_normal_(self.position_embeddings, std=0.02)

    def forward(self, x):
        x = self.patch_embeddings(x)
        x = x.flatten(2).transpose(-1, -2)
        embeddings = x + self.position_embeddings
        return self.dropout(embeddings)


class SABlock(nn.Module):
    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(hidden_size, hidden_size * 3, bias=False)
        self.out_proj = nn.Linear(hidden_size, hidden_size)
        self.scale = (hidden_size // num_heads) ** -0.5

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1) * self.scale).softmax(dim=-1)
        x = (att @ v).transpose(1, 2).reshape(b, n, c)
        return self.out_proj(x)


class TransformerBlock(nn.Module):
    def __init__(self, hidden_size, mlp_dim, num_heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(hidden_size)
        self.attn = SABlock(hidden_size, num_heads)
        self.norm2 = nn.LayerNorm(hidden_size)
        self.mlp = nn.Sequential(nn.Linear(hidden_size, mlp_dim), nn.GELU(), nn.Linear(mlp_dim, hidden_size))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class ViT(nn.Module):
    def __init__(self, in_channels=1, img_size=16, patch_size=8, hidden_size=32, mlp_dim=64, num_layers=2,
                 num_heads=4, classification=True, num_classes=3):
        super().__init__()
        self.patch_embedding = PatchEmbeddingBlock(in_channels, img_size, patch_size, hidden_size)
        self.blocks = nn.ModuleList([TransformerBlock(hidden_size, mlp_dim, num_heads) for _ in range(num_layers)])
        self.norm = nn.LayerNorm(hidden_size)
        self.classification = classification
        if self.classification:
            self.cls_token = nn.Parameter(torch.zeros(1, 1, hidden_size))
            self.classification_head = nn.Sequential(nn.Linear(hidden_size, num_classes), nn.Tanh())

    def forward(self, x):
        x = self.patch_embedding(x)
        if self.classification:
            cls_token = self.cls_token.expand(x.shape[0], -1, -1)
            x = torch.cat((cls_token, x), dim=1)
        hidden_states_out = []
        for blk in self.blocks:
            x = blk(x)
            hidden_states_out.append(x)
        x = self.norm(x)
        if self.classification:
            x = self.classification_head(x[:, 0])
        return x, hidden_states_out


torch.manual_seed(0)
model = ViT()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
images = torch.randn(2, 1, 16, 16, 16)
labels = torch.tensor([0, 2])
for step in range(2):
    logits, _ = model(images)
    loss = F.cross_entropy(logits, labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
print("parameters which did not receive grad:", [n for n, p in model.named_parameters() if p.grad is None])
