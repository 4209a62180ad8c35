"""The optimizer is given the encoder's parameters only; the decoder never learns."""
import torch
from torch import nn


class AutoEncoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Linear(8, 2)
        self.decoder = nn.Linear(2, 8)

    def forward(self, x):
        return self.decoder(torch.tanh(self.encoder(x)))


torch.manual_seed(0)
model = AutoEncoder()
opt = torch.optim.Adam(model.encoder.parameters(), lr=1e-2)  # <- optimizer
x = torch.randn(32, 8)
for _ in range(3):
    opt.zero_grad()
    nn.functional.mse_loss(model(x), x).backward()
    opt.step()
