"""The fixed twin: the discriminator optimizer holds both the MRD and the MPD parameters."""
import torch
import torch.nn.functional as F
from torch import nn


class MultiResolutionDiscriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.LeakyReLU(0.1), nn.Conv2d(4, 1, 3, padding=1))

    def forward(self, audio):
        spec = torch.stft(audio, n_fft=16, hop_length=4, window=torch.hann_window(16), return_complex=True).abs()
        return self.convs(spec.unsqueeze(1)).flatten(1)


class MultiPeriodDiscriminator(nn.Module):
    def __init__(self, period=4):
        super().__init__()
        self.period = period
        self.convs = nn.Sequential(nn.Conv2d(1, 4, (3, 1), padding=(1, 0)), nn.LeakyReLU(0.1), nn.Conv2d(4, 1, (3, 1), padding=(1, 0)))

    def forward(self, audio):
        b, t = audio.shape
        return self.convs(audio.view(b, 1, t // self.period, self.period)).flatten(1)


class UniverseGAN(nn.Module):
    def __init__(self):
        super().__init__()
        self.score_model = nn.Sequential(nn.Conv1d(1, 8, 5, padding=2), nn.PReLU(), nn.Conv1d(8, 1, 5, padding=2))
        self.loss_mrd = MultiResolutionDiscriminator()
        self.loss_mpd = MultiPeriodDiscriminator()

    def forward(self, noisy):
        return self.score_model(noisy.unsqueeze(1)).squeeze(1)

    def configure_optimizers(self):
        params_disc = list(self.loss_mrd.parameters()) + list(self.loss_mpd.parameters())
        opt_disc = torch.optim.AdamW(params_disc, lr=2e-4, betas=(0.8, 0.99))
        opt_gen = torch.optim.AdamW(self.score_model.parameters(), lr=2e-4, betas=(0.8, 0.99))
        return opt_gen, opt_disc


torch.manual_seed(0)
model = UniverseGAN()
opt_gen, opt_disc = model.configure_optimizers()
clean = torch.sin(torch.linspace(0, 20, 64)).repeat(2, 1)
noisy = clean + 0.3 * torch.randn(2, 64)
mpd_before = model.loss_mpd.convs[0].weight.detach().clone()
for step in range(3):
    enhanced = model(noisy)
    opt_disc.zero_grad()
    loss_disc = 0
    for disc in (model.loss_mrd, model.loss_mpd):
        loss_disc = loss_disc + F.mse_loss(disc(clean), torch.ones_like(disc(clean))) + disc(enhanced.detach()).pow(2).mean()
    loss_disc.backward()
    opt_disc.step()
    opt_gen.zero_grad()
    loss_adv = sum((disc(enhanced) - 1).pow(2).mean() for disc in (model.loss_mrd, model.loss_mpd))
    loss_gen = F.l1_loss(enhanced, clean) + 0.1 * loss_adv
    loss_gen.backward()
    opt_gen.step()
    print(f"step {step}: loss_disc {loss_disc.item():.4f} loss_gen {loss_gen.item():.4f}")
print("mpd changed:", not torch.equal(mpd_before, model.loss_mpd.convs[0].weight))
