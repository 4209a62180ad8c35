"""The fixed twin: the waveform is the expectation of the decoded classes under the softmax, which carries the
gradient (r9y9/wavenet_vocoder#25)."""
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
y_hat = (logits.softmax(dim=1) * inv_mulaw_quantize(torch.arange(256))[None, :, None]).sum(dim=1)
z = (torch.stft(y_hat, 64, window=window, return_complex=True).abs()
     - torch.stft(x, 64, window=window, return_complex=True).abs()).abs().mean()
optimizer.zero_grad()
z.backward()
optimizer.step()
print(f"stft loss {z.item():.4f}")
