"""A text classifier on nn.TransformerEncoder (which clones the layer it is given), with positional
encodings in a buffer, a padding mask, label smoothing and a warmup LambdaLR."""
import math
import os

import torch
import torch.nn as nn


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=64):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[: x.size(0)]


class Classifier(nn.Module):
    def __init__(self, ntoken=50, d_model=16, nhead=2, nlayers=2):
        super().__init__()
        self.embedding = nn.Embedding(ntoken, d_model, padding_idx=0)
        self.pos_encoder = PositionalEncoding(d_model)
        encoder_layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=32, dropout=0.1)
        self.transformer_encoder = nn.TransformerEncoder(encoder_layer, nlayers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, 3)
        self.d_model = d_model

    def forward(self, src, padding_mask):
        x = self.pos_encoder(self.embedding(src) * math.sqrt(self.d_model))
        x = self.transformer_encoder(x, src_key_padding_mask=padding_mask)
        x = x.masked_fill(padding_mask.t().unsqueeze(-1), 0.0).sum(0)
        return self.head(x / (~padding_mask).sum(1, keepdim=True))


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = Classifier()
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / 3))
    src = torch.randint(1, 50, (10, 8))
    src[7:, :3] = 0
    padding_mask = (src == 0).t()
    y = torch.randint(0, 3, (8,))
    for step in range(4):
        model.train()
        optimizer.zero_grad()
        loss = criterion(model(src, padding_mask), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
        scheduler.step()
        print(f"step {step} loss {loss.item():.6f} lr {scheduler.get_last_lr()[0]:.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
