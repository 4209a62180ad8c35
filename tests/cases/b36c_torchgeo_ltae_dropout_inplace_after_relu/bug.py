"""torchgeo's LTAE (Lightweight Temporal Attention Encoder for satellite image time series), issue
torchgeo/torchgeo#3735: the MLP that follows the temporal attention ends in BatchNorm1d + ReLU(inplace=True),
and its output goes through `self.dropout = nn.Dropout(dropout, inplace=True)`; the in-place dropout rewrites
the ReLU output that ReluBackward0 saved, so loss.backward() raises "one of the variables needed for gradient
computation has been modified by an inplace operation ... output 0 of ReluBackward0, is at version 2; expected
version 1" (the fix, PR #3737, removes inplace=True from the Dropout layers)."""
import math

import torch
from torch import nn


class IndexPositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, T=1000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout, inplace=True)
        position = torch.arange(T).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(T) / d_model))
        pe = torch.zeros(1, T, d_model)
        pe[0, :, 0::2] = torch.sin(position * div_term)
        pe[0, :, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        pe = self.pe[:, : x.size(1)]
        return self.dropout(x + pe)


class LTAE(nn.Module):
    def __init__(self, in_channels=16, n_head=4, n_neurons=(16, 32), dropout=0.2, d_model=16,
                 T=1000, len_max_seq=5):
        super().__init__()
        self.inconv = nn.Sequential(nn.Conv1d(in_channels, d_model, 1), nn.LayerNorm([d_model, len_max_seq]))
        self.pos_encoder = IndexPositionalEncoding(d_model, dropout, T)
        self.attention = nn.MultiheadAttention(embed_dim=d_model, num_heads=n_head, dropout=dropout,
                                               batch_first=True)
        self.inlayernorm = nn.LayerNorm(in_channels)
        self.outlayernorm = nn.LayerNorm(n_neurons[-1])
        activation = nn.ReLU(inplace=True)
        layers = []
        for i in range(len(n_neurons) - 1):
            layers.extend([nn.Linear(n_neurons[i], n_neurons[i + 1]), nn.BatchNorm1d(n_neurons[i + 1]), activation])
        self.mlp = nn.Sequential(*layers)
        self.dropout = nn.Dropout(dropout, inplace=True)  # <- inplace_saved

    def forward(self, x):
        x = self.inlayernorm(x)
        x = self.inconv(x.permute(0, 2, 1)).permute(0, 2, 1)
        x = self.pos_encoder(x)
        attention_output, _ = self.attention(x, x, x)
        mlp_input = attention_output.mean(dim=1)
        return self.outlayernorm(self.dropout(self.mlp(mlp_input)))


torch.manual_seed(0)
encoder = LTAE()
head = nn.Linear(32, 3)
optimizer = torch.optim.Adam(list(encoder.parameters()) + list(head.parameters()), lr=1e-3)
criterion = nn.CrossEntropyLoss()
x = torch.randn(8, 5, 16)
y = torch.randint(0, 3, (8,))
for step in range(3):
    encoder.train()
    optimizer.zero_grad()
    loss = criterion(head(encoder(x)), y)
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
