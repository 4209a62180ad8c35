"""microsoft/unilm BEATs (microsoft/unilm#999, https://github.com/microsoft/unilm/pull/999): fine-tuning BEATs on
the authors' own task fails in backward with "RuntimeError: one of the variables needed for gradient
computation has been modified by an inplace operation: [torch.cuda.FloatTensor [32, 768, 248]]".
Why: TransformerEncoder.extract_features (beats/backbone.py L.116) adds the convolutional positional embedding
with `x += x_conv`; pos_conv's Conv1d saved its input x.transpose(1, 2), a view of x, for the weight gradient, and
the in-place add bumps x's version before backward runs.
Fix (the PR's): write the sum out of place, `x = x.clone() + x_conv` (upstream now has `x = x + x_conv`)."""
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn import LayerNorm


class SamePad(nn.Module):
    def __init__(self, kernel_size):
        super().__init__()
        self.remove = 1 if kernel_size % 2 == 0 else 0

    def forward(self, x):
        return x[:, :, :-self.remove] if self.remove > 0 else x


class TransformerEncoder(nn.Module):
    def __init__(self, embedding_dim=16, conv_pos=4, conv_pos_groups=4, dropout=0.0):
        super().__init__()
        self.dropout = dropout
        self.embedding_dim = embedding_dim
        self.pos_conv = nn.Conv1d(embedding_dim, embedding_dim, kernel_size=conv_pos,
                                  padding=conv_pos // 2, groups=conv_pos_groups)
        self.pos_conv = nn.Sequential(self.pos_conv, SamePad(conv_pos), nn.GELU())
        self.layers = nn.ModuleList([nn.TransformerEncoderLayer(embedding_dim, 2, 32, dropout=0.0)])
        self.layer_norm = LayerNorm(self.embedding_dim)

    def extract_features(self, x, padding_mask=None):
        if padding_mask is not None:
            x[padding_mask] = 0

        x_conv = self.pos_conv(x.transpose(1, 2))
        x_conv = x_conv.transpose(1, 2)
        x = x.clone() + x_conv

        x = self.layer_norm(x)
        x = F.dropout(x, p=self.dropout, training=self.training)
        x = x.transpose(0, 1)
        for layer in self.layers:
            x = layer(x)
        return x.transpose(0, 1)


class BEATs(nn.Module):
    """beats/BEATs.py in short: patch embedding -> layer norm -> post_extract_proj -> encoder."""
    def __init__(self, embed=16):
        super().__init__()
        self.patch_embedding = nn.Conv2d(1, embed, kernel_size=4, stride=4, bias=False)
        self.layer_norm = LayerNorm(embed)
        self.post_extract_proj = nn.Linear(embed, embed)
        self.encoder = TransformerEncoder(embed)

    def extract_features(self, fbank):
        features = self.patch_embedding(fbank.unsqueeze(1))
        features = features.reshape(features.shape[0], features.shape[1], -1).transpose(1, 2)
        features = self.layer_norm(features)
        x = self.post_extract_proj(features)
        return self.encoder.extract_features(x)


torch.manual_seed(0)
model = BEATs()
head = nn.Linear(16, 3)
optimizer = torch.optim.AdamW(list(model.parameters()) + list(head.parameters()), lr=1e-3)
fbank, labels = torch.randn(4, 32, 16), torch.tensor([0, 1, 2, 1])
before = model.post_extract_proj.weight.detach().clone()
for step in range(3):
    logits = head(model.extract_features(fbank).mean(dim=1))
    loss = F.cross_entropy(logits, labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss={loss.item():.4f}")
print("post_extract_proj changed:", not torch.equal(before, model.post_extract_proj.weight))
