"""pyannote-audio pull request #125 "Filters to Variable", https://github.com/pyannote/pyannote-audio/pull/125:
training a SincNet front-end with pyannote's new SincConv layer, the user saw `low_hz_` go NaN and proposed to
wrap the computed filter bank in a Variable (`filters = Variable(filters)`) before the convolution ("net is
learning and working fine"). A day later the same user withdrew it: "The proposed method simply makes
requires_grad=False"; the PR was closed unmerged.
Why: `Variable(t)` (kept in today's PyTorch as a legacy constructor) builds a new leaf tensor that shares `t`'s
values but not its history, with requires_grad=False. The sinc filters are computed from the learnable cut-off
frequencies `low_hz_` and `band_hz_`; after the re-wrap the convolution no longer depends on them, so both get
grad None and the filter bank never changes (only the layers after it train, which is why the net still seemed
to learn).
Fix: use the computed filters directly in F.conv1d (pyannote kept the layer without the Variable). The
SincConv below is pyannote's 2018 layer (Ravanelli's SincConv_fast) shrunk to 8 short filters; the speaker
classifier after it and the training loop are a few lines."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable

torch.set_num_threads(1)


class SincConv(nn.Module):
    """Sinc-based convolution (Ravanelli & Bengio, "Speaker Recognition from raw waveform with SincNet")."""

    @staticmethod
    def to_mel(hz):
        return 2595 * np.log10(1 + hz / 700)

    @staticmethod
    def to_hz(mel):
        return 700 * (10 ** (mel / 2595) - 1)

    @staticmethod
    def sinc(x):
        # Numerically stable definition
        x_left = x[:, 0:int((x.shape[1] - 1) / 2)]
        y_left = torch.sin(x_left) / x_left
        y_right = torch.flip(y_left, dims=[1])
        sinc = torch.cat([y_left, torch.ones([x.shape[0], 1]).to(x.device), y_right], dim=1)
        return sinc

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 sample_rate=16000, min_low_hz=50, min_band_hz=50):
        super().__init__()
        if in_channels != 1:
            raise ValueError("SincConv only supports one input channel")
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        if kernel_size % 2 == 0:
            self.kernel_size = self.kernel_size + 1
        self.stride, self.padding, self.dilation = stride, padding, dilation
        self.sample_rate = sample_rate
        self.min_low_hz = min_low_hz
        self.min_band_hz = min_band_hz

        # initialize filterbanks such that they are equally spaced in Mel scale
        low_hz = 30
        high_hz = self.sample_rate / 2 - (self.min_low_hz + self.min_band_hz)
        mel = np.linspace(self.to_mel(low_hz), self.to_mel(high_hz), self.out_channels + 1)
        hz = self.to_hz(mel) / self.sample_rate

        # filter lower frequency (out_channels, 1)
        self.low_hz_ = nn.Parameter(torch.Tensor(hz[:-1]).view(-1, 1))
        # filter frequency band (out_channels, 1)
        self.band_hz_ = nn.Parameter(torch.Tensor(np.diff(hz)).view(-1, 1))

        # Hamming window
        self.window_ = torch.hamming_window(self.kernel_size)
        # (kernel_size, 1)
        n = (self.kernel_size - 1) / 2
        self.n_ = torch.arange(-n, n + 1).view(1, -1) / self.sample_rate

    def forward(self, waveforms):
        self.n_ = self.n_.to(waveforms.device)
        self.window_ = self.window_.to(waveforms.device)

        low = self.min_low_hz / self.sample_rate + torch.abs(self.low_hz_)
        high = low + self.min_band_hz / self.sample_rate + torch.abs(self.band_hz_)

        f_times_t = torch.matmul(low, self.n_)
        low_pass1 = 2 * low * self.sinc(2 * math.pi * f_times_t * self.sample_rate)

        f_times_t = torch.matmul(high, self.n_)
        low_pass2 = 2 * high * self.sinc(2 * math.pi * f_times_t * self.sample_rate)

        band_pass = low_pass2 - low_pass1
        max_, _ = torch.max(band_pass, dim=1, keepdim=True)
        band_pass = band_pass / max_

        filters = (band_pass * self.window_).view(self.out_channels, 1, self.kernel_size)
        # (no re-wrapping: the filters must stay attached to low_hz_ and band_hz_)

        return F.conv1d(waveforms, filters, stride=self.stride, padding=self.padding,
                        dilation=self.dilation, bias=None, groups=1)


class SincNet(nn.Module):
    def __init__(self, n_speakers=4):
        super().__init__()
        self.sinc = SincConv(1, 8, 51)
        self.pool = nn.MaxPool1d(3)
        self.fc = nn.Linear(8, 16)
        self.out = nn.Linear(16, n_speakers)

    def forward(self, waveforms):
        x = F.leaky_relu(self.pool(torch.abs(self.sinc(waveforms))))
        x = x.mean(dim=-1)
        return self.out(F.leaky_relu(self.fc(x)))


torch.manual_seed(0)
model = SincNet()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
low_before = model.sinc.low_hz_.detach().clone()
for step in range(5):
    waveforms = torch.randn(8, 1, 400)
    speakers = torch.randint(0, 4, (8,))
    loss = F.cross_entropy(model(waveforms), speakers)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("low_hz_.grad is None:", model.sinc.low_hz_.grad is None)
print("low_hz_ changed:", not torch.equal(low_before, model.sinc.low_hz_))
