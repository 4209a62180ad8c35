"""YourTTS speaker consistency loss (coqui-ai/TTS#2348): the ResNet speaker encoder computes its input spectrogram
inside `with torch.no_grad():`, so when the generated waveform is fed to it for the speaker consistency loss, the
embedding carries no graph back to the generator. The term is added to the generator loss, backward runs, and it
adds nothing to the generator's update (the report: compute the spectrogram outside no_grad)."""
import torch
import torch.nn.functional as F
from torch import nn


class ResNetSpeakerEncoder(nn.Module):
    def __init__(self, n_fft=64, emb=16):
        super().__init__()
        self.n_fft = n_fft
        self.instancenorm = nn.InstanceNorm1d(n_fft // 2 + 1)
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.fc = nn.Linear(8, emb)

    def torch_spec(self, x):
        window = torch.hann_window(self.n_fft)
        return torch.stft(x, self.n_fft, hop_length=16, window=window, return_complex=True).abs()

    def forward(self, x):
        x = self.torch_spec(x.squeeze(1))
        x = (x + 1e-6).log()
        x = self.instancenorm(x).unsqueeze(1)
        x = F.relu(self.conv1(x))
        return F.normalize(self.fc(x.mean(dim=(2, 3))), dim=1)


torch.manual_seed(0)
generator = nn.Sequential(nn.Conv1d(8, 16, 5, padding=2), nn.Tanh(), nn.Upsample(scale_factor=8),
                          nn.Conv1d(16, 1, 5, padding=2))
speaker_encoder = ResNetSpeakerEncoder().requires_grad_(False).eval()
optimizer = torch.optim.AdamW(generator.parameters(), lr=1e-3)
latents, wav_gt = torch.randn(2, 8, 64), torch.randn(2, 1, 512)
for step in range(2):
    wav = generator(latents)
    loss_wav = F.l1_loss(wav, wav_gt)
    gt_emb, syn_emb = speaker_encoder(wav_gt), speaker_encoder(wav)
    loss_spk = -F.cosine_similarity(gt_emb, syn_emb).mean() * 9.0
    optimizer.zero_grad()
    (loss_wav + loss_spk).backward()
    optimizer.step()
    print(f"step {step}: loss_wav {loss_wav.item():.4f} loss_spk {loss_spk.item():.4f} "
          f"(speaker loss requires_grad={loss_spk.requires_grad})")
loss_spk = -F.cosine_similarity(speaker_encoder(wav_gt), speaker_encoder(generator(latents))).mean()
spk_grads = torch.autograd.grad(loss_spk, list(generator.parameters()))
print("speaker loss reaches every generator weight:", all(g.abs().sum() > 0 for g in spk_grads))
