"""x-transformers' encoder-decoder (lucidrains/x-transformers#273): XTransformer's encoder is a TransformerWrapper
that returns embeddings to the decoder's cross-attention, yet it still builds its to_logits projection, so
"parameter encoder.to_logits.weight in an Encoder/Decoder is not part of the forward pass" and never gets a
gradient ("This creates problems when running DDP"; the fix: no to_logits for an encoder that only returns
embeddings)."""
import torch
import torch.nn.functional as F
from torch import nn


class TransformerWrapper(nn.Module):
    def __init__(self, num_tokens, dim, cross_attend=False, return_only_embed=False):
        super().__init__()
        self.token_emb = nn.Embedding(num_tokens, dim)
        layer = nn.TransformerDecoderLayer if cross_attend else nn.TransformerEncoderLayer
        self.attn_layers = layer(dim, nhead=2, dim_feedforward=32, dropout=0.0, batch_first=True)
        self.cross_attend = cross_attend
        self.to_logits = nn.Linear(dim, num_tokens, bias=False)  # <- unused_parameter

    def forward(self, x, context=None, return_embeddings=False):
        x = self.token_emb(x)
        x = self.attn_layers(x, context) if self.cross_attend else self.attn_layers(x)
        return x if return_embeddings else self.to_logits(x)


class XTransformer(nn.Module):
    def __init__(self, num_tokens=40, dim=16):
        super().__init__()
        self.encoder = TransformerWrapper(num_tokens, dim, return_only_embed=True)
        self.decoder = TransformerWrapper(num_tokens, dim, cross_attend=True)

    def forward(self, src, tgt):
        enc = self.encoder(src, return_embeddings=True)
        logits = self.decoder(tgt[:, :-1], context=enc)
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt[:, 1:].reshape(-1))


torch.manual_seed(0)
model = XTransformer()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
src, tgt = torch.randint(0, 40, (4, 10)), torch.randint(0, 40, (4, 9))
for step in range(5):
    loss = model(src, tgt)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
unused = [name for name, p in model.named_parameters() if p.grad is None]
print(f"loss {loss.item():.4f}; parameters without a gradient: {unused}")
