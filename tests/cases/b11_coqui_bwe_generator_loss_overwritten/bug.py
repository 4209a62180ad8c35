"""Coqui TTS bandwidth extension (coqui-ai/TTS#1451, review of BWEGeneratorLoss): the generator loss first sets
`return_dict["loss"]` to the L1 waveform loss, then the spectrogram part assigns
`return_dict["loss"] = return_dict["l1_mel"]` "with = not with +=, otherwise the l1_wavform loss will be ignored":
the waveform term is computed and logged but takes no part in the backward."""
import torch
import torch.nn.functional as F
from torch import nn


class BWEGeneratorLoss(nn.Module):
    def __init__(self, n_fft=64):
        super().__init__()
        self.n_fft = n_fft
        self.register_buffer("window", torch.hann_window(n_fft))

    def mel(self, y):
        spec = torch.stft(y, self.n_fft, hop_length=16, window=self.window, return_complex=True).abs()
        return torch.log(spec + 1e-5)

    def forward(self, y_hat, y):
        return_dict = {}
        return_dict["l1_waveform"] = F.l1_loss(y_hat, y)
        return_dict["loss"] = return_dict["l1_waveform"]
        return_dict["l1_mel"] = F.l1_loss(self.mel(y_hat[:, 0, :]), self.mel(y[:, 0, :]))
        return_dict["loss"] = return_dict["l1_mel"]  # <- cut_term
        return return_dict


torch.manual_seed(0)
generator = nn.Sequential(nn.Conv1d(1, 16, 9, padding=4), nn.Tanh(), nn.Conv1d(16, 1, 9, padding=4))
criterion = BWEGeneratorLoss()
optimizer = torch.optim.Adam(generator.parameters(), lr=1e-3)
low_band, full_band = torch.randn(4, 1, 256), torch.randn(4, 1, 256)
for step in range(3):
    losses = criterion(generator(low_band), full_band)
    optimizer.zero_grad()
    losses["loss"].backward()
    optimizer.step()
    print(f"step {step}: l1_waveform {losses['l1_waveform'].item():.4f} (logged), "
          f"backward loss {losses['loss'].item():.4f}")
