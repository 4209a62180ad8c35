"""Time-frequency consistency pre-training (mims-harvard/TFC-pretraining#37): the time and frequency encoders are
trained with their contrastive losses, and the cross-domain consistency loss loss_c is computed every step but left
out of the loss that is pushed back, so the projections are never pulled together."""
import torch
import torch.nn.functional as F
from torch import nn


class TFC(nn.Module):
    def __init__(self, length=32, dim=16):
        super().__init__()
        self.encoder_t = nn.Sequential(nn.Linear(length, 32), nn.ReLU(), nn.Linear(32, dim))
        self.projector_t = nn.Linear(dim, dim)
        self.encoder_f = nn.Sequential(nn.Linear(length, 32), nn.ReLU(), nn.Linear(32, dim))
        self.projector_f = nn.Linear(dim, dim)

    def forward(self, x_t, x_f):
        h_t, h_f = self.encoder_t(x_t), self.encoder_f(x_f)
        return h_t, F.normalize(self.projector_t(h_t), dim=1), h_f, F.normalize(self.projector_f(h_f), dim=1)


def nt_xent(z1, z2, temperature=0.2):
    logits = z1 @ z2.t() / temperature
    return F.cross_entropy(logits, torch.arange(z1.size(0)))


torch.manual_seed(0)
model = TFC()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
x = torch.randn(32, 32)
x_f = torch.fft.fft(x).abs()
lam = 0.2
for step in range(30):
    x_aug, x_f_aug = x + 0.1 * torch.randn_like(x), x_f + 0.1 * torch.randn_like(x_f)
    h_t, z_t, h_f, z_f = model(x, x_f)
    h_t_aug, z_t_aug, h_f_aug, z_f_aug = model(x_aug, x_f_aug)
    loss_t = nt_xent(h_t, h_t_aug)
    loss_f = nt_xent(h_f, h_f_aug)
    l_TF = nt_xent(z_t, z_f)
    l_1, l_2, l_3 = nt_xent(z_t, z_f_aug), nt_xent(z_t_aug, z_f), nt_xent(z_t_aug, z_f_aug)
    loss_c = (1 + l_TF - l_1) + (1 + l_TF - l_2) + (1 + l_TF - l_3)
    loss = lam * (loss_t + loss_f)  # <- cut_term
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"loss_t {loss_t.item():.3f} loss_f {loss_f.item():.3f} loss_c {loss_c.item():.3f}")
