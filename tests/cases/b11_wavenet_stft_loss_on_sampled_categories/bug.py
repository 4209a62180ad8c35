"""An STFT loss on WaveNet's output (r9y9/wavenet_vocoder#25): with the categorical (mu-law, 256 classes) output,
the user takes y_hat from the model's class scores, computes z = abs(stft(y_hat) - stft(x)) and "it seems that z can
not backward": the waveform is decoded from the argmax class, which carries no gradient, so backward raises
"element 0 of tensors does not require grad" (the maintainer's reading: the categorical output does not pass the loss
back; a differentiable waveform, e.g. the expectation over classes or the mixture output, does)."""
import math

import torch
from torch import nn


def inv_mulaw_quantize(y, mu=255):
    y = 2 * y.float() / mu - 1
    return torch.sign(y) * ((1 + mu) ** y.abs() - 1) / mu


class WaveNet(nn.Module):
    def __init__(self, quantize_channels=256, residual=32):
        super().__init__()
        self.first = nn.Conv1d(1, residual, 3, padding=1)
        self.dilated = nn.ModuleList(nn.Conv1d(residual, residual, 3, padding=d, dilation=d) for d in (1, 2, 4))
        self.last = nn.Conv1d(residual, quantize_channels, 1)

    def forward(self, x):
        h = self.first(x)
        for conv in self.dilated:
            h = h + torch.tanh(conv(h))
        return self.last(h)


torch.manual_seed(0)
model = WaveNet()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
x = torch.sin(torch.linspace(0, 40 * math.pi, 512)).unsqueeze(0)
window = torch.hann_window(64)
logits = model(x.unsqueeze(1))
y_hat = inv_mulaw_quantize(logits.argmax(dim=1))  # <- non_differentiable
z = (torch.stft(y_hat, 64, window=window, return_complex=True).abs()
     - torch.stft(x, 64, window=window, return_complex=True).abs()).abs().mean()
optimizer.zero_grad()
z.backward()
optimizer.step()
print(f"stft loss {z.item():.4f}")
