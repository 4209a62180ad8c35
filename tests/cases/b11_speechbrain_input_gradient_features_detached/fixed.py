"""The fixed twin: the features reach the encoder without .detach(), so the loss has a gradient with respect to the
waveform (speechbrain/speechbrain#1396)."""
import torch
import torch.nn.functional as F
from torch import nn


class Fbank(nn.Module):
    def __init__(self, n_fft=64, n_mels=12):
        super().__init__()
        self.n_fft = n_fft
        self.register_buffer("window", torch.hann_window(n_fft))
        self.register_buffer("mel", torch.rand(n_fft // 2 + 1, n_mels))

    def forward(self, wavs):
        spec = torch.stft(wavs, self.n_fft, hop_length=16, window=self.window, return_complex=True).abs() ** 2
        return torch.log(spec.transpose(1, 2) @ self.mel + 1e-6)


class SpeakerBrain:
    def __init__(self, modules):
        self.modules = modules

    def compute_forward(self, wavs):
        feats = self.modules.compute_features(wavs)
        feats = self.modules.mean_var_norm(feats)
        x = self.modules.enc(feats)
        return self.modules.classifier(x.mean(dim=1))

    def compute_objectives(self, predictions, labels):
        return F.cross_entropy(predictions, labels)


torch.manual_seed(0)
modules = nn.ModuleDict({
    "compute_features": Fbank(),
    "mean_var_norm": nn.LayerNorm(12, elementwise_affine=False),
    "enc": nn.Sequential(nn.Linear(12, 32), nn.ReLU()),
    "classifier": nn.Linear(32, 4),
})
brain = SpeakerBrain(modules)
wavs, labels = torch.randn(2, 800), torch.tensor([1, 3])
wavs.requires_grad = True
loss = brain.compute_objectives(brain.compute_forward(wavs), labels)
loss.backward()
print(f"gradient w.r.t. the input waveform set: {wavs.grad is not None}")
