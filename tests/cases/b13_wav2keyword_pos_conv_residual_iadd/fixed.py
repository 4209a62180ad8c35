"""Wav2Keyword: keyword spotting by fine-tuning wav2vec 2.0 (dobby-seo/Wav2Keyword#9). The wav2vec2 encoder's
extract_features adds the convolutional positional embedding in place, `x += x_conv`, while the positional conv
saved `x` (through its transposed view) for its weight gradient; with PyTorch >= 1.11 backward fails with "one of the
variables needed for gradient computation has been modified by an inplace operation" (the PR: `x = x + x_conv`)."""
import torch
import torch.nn.functional as F
from torch import nn


class TransformerEncoder(nn.Module):
    def __init__(self, dim=32, layers=2):
        super().__init__()
        self.pos_conv = nn.Sequential(nn.Conv1d(dim, dim, 9, padding=4, groups=4), nn.GELU())
        self.layer_norm = nn.LayerNorm(dim)
        self.layers = nn.ModuleList(nn.TransformerEncoderLayer(dim, 4, 64, dropout=0.0, batch_first=True)
                                    for _ in range(layers))

    def extract_features(self, x):
        x_conv = self.pos_conv(x.transpose(1, 2))
        x_conv = x_conv.transpose(1, 2)
        x = x + x_conv
        x = self.layer_norm(x)
        for layer in self.layers:
            x = layer(x)
        return x


class Wav2Vec2KWS(nn.Module):
    def __init__(self, n_keywords=12, dim=32):
        super().__init__()
        self.feature_extractor = nn.Sequential(nn.Conv1d(1, 64, 10, 5), nn.GELU(), nn.Conv1d(64, 64, 8, 4), nn.GELU())
        self.post_extract_proj = nn.Linear(64, dim)
        self.encoder = TransformerEncoder(dim)
        self.classifier = nn.Linear(dim, n_keywords)

    def forward(self, wav):
        features = self.feature_extractor(wav.unsqueeze(1)).transpose(1, 2)
        x = self.post_extract_proj(features)
        x = self.encoder.extract_features(x)
        return self.classifier(x.mean(dim=1))


torch.manual_seed(0)
model = Wav2Vec2KWS()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
before = {n: p.detach().clone() for n, p in model.named_parameters()}
wavs, labels = torch.randn(4, 1600), torch.randint(0, 12, (4,))
loss = F.cross_entropy(model(wavs), labels)
optimizer.zero_grad()
loss.backward()
optimizer.step()
print(f"loss {loss.item():.4f}")
print("every parameter got a grad and changed:",
      all(p.grad is not None and not torch.equal(before[n], p) for n, p in model.named_parameters()))
