"""HiFi-GAN (rishikksh20/HiFi-GAN#8, fixed by #9): the generator's mel loss compares `stft.mel_spectrogram(fake_audio)`
with the real mel, but the STFT helper does `magnitudes = magnitudes.data`, so "mel_fake will not have a gradient
function ... loss_mel ... won't contribute to training". The adversarial term still trains the generator; the mel
term, the one HiFi-GAN weights 45x, adds nothing to its update."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
N_FFT, HOP, N_MELS = 64, 16, 8
mel_basis = torch.rand(N_MELS, N_FFT // 2 + 1)


def mel_spectrogram(audio):
    spec = torch.stft(audio, N_FFT, HOP, window=torch.hann_window(N_FFT), return_complex=True)
    magnitudes = spec.abs()
    magnitudes = magnitudes.data  # <- cut_term
    return torch.log(torch.clamp(mel_basis @ magnitudes, min=1e-5))


generator = nn.Sequential(nn.Conv1d(N_MELS, 32, 3, padding=1), nn.LeakyReLU(0.1),
                          nn.ConvTranspose1d(32, 1, HOP, stride=HOP), nn.Tanh())
discriminator = nn.Sequential(nn.Conv1d(1, 16, 15, stride=4, padding=7), nn.LeakyReLU(0.1), nn.Conv1d(16, 1, 3))
opt_g = torch.optim.Adam(generator.parameters(), 2e-4, betas=(0.8, 0.99))
opt_d = torch.optim.Adam(discriminator.parameters(), 2e-4, betas=(0.8, 0.99))
audio = torch.randn(4, 256) * 0.3
mel = mel_spectrogram(audio)
for step in range(3):
    fake_audio = generator(mel).squeeze(1)[:, :audio.shape[1]]
    opt_d.zero_grad()
    loss_d = ((discriminator(audio.unsqueeze(1)) - 1) ** 2).mean() + (discriminator(fake_audio.detach().unsqueeze(1)) ** 2).mean()
    loss_d.backward()
    opt_d.step()
    opt_g.zero_grad()
    mel_fake = mel_spectrogram(fake_audio)
    loss_mel = F.l1_loss(mel_fake, mel)
    loss_adv = ((discriminator(fake_audio.unsqueeze(1)) - 1) ** 2).mean()
    loss_g = loss_adv + 45 * loss_mel
    loss_g.backward()
    opt_g.step()
print(f"mel_fake.grad_fn: {mel_fake.grad_fn}; loss_mel requires grad: {loss_mel.requires_grad}")
