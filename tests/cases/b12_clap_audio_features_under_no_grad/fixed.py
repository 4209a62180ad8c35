"""The fixed twin: as in LAION-AI/CLAP#92, `get_audio_features` keeps grad mode on when the waveform requires grad,
so the CLAP loss trains the generator."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
mel_fb = torch.rand(201, 16)


def get_mel(audio_data):
    spec = torch.stft(audio_data, 400, 160, window=torch.hann_window(400), return_complex=True).abs() ** 2
    return torch.log(spec.T @ mel_fb + 1e-6)


def get_audio_features(sample, audio_data, max_len, require_grad=False):
    with torch.set_grad_enabled(require_grad):
        mel = get_mel(audio_data)
        sample["mel_fusion"] = mel
        sample["waveform"] = F.pad(audio_data, (0, max_len - audio_data.shape[-1]))
    return sample


class CLAPModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.audio_branch = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32))

    def get_audio_embedding_from_data(self, x, use_tensor=False):
        self.eval()
        audio_input = [get_audio_features({}, audio_waveform, 4800, require_grad=audio_waveform.requires_grad) for audio_waveform in x]
        mels = torch.stack([d["mel_fusion"] for d in audio_input])
        return F.normalize(self.audio_branch(mels).mean(1), dim=-1)


clap = CLAPModule().requires_grad_(False)
text_embed = F.normalize(torch.randn(1, 32), dim=-1)  # the prompt's CLAP text embedding
generator = nn.Sequential(nn.Linear(8, 64), nn.Tanh(), nn.Linear(64, 4000), nn.Tanh())
optimizer = torch.optim.Adam(generator.parameters(), lr=1e-3)
z = torch.randn(2, 8)
for step in range(3):
    audio = generator(z)
    audio_embed = clap.get_audio_embedding_from_data(audio, use_tensor=True)
    loss = 1 - (audio_embed * text_embed).sum(-1).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"generator grad set: {generator[0].weight.grad is not None}")
