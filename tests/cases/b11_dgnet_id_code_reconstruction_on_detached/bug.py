"""DG-Net's appearance-code reconstruction loss (NVlabs/DG-Net#49): the id encoder ft_netAB ends its forward with
`f = f.detach()`, and gen_update computes `loss_gen_recon_f_a = recon_criterion(f_a_recon, f_a)` where both codes
come from that encoder, so "because the embeddings are detached these losses are not constraining the model": the
term is added to the generator loss but reaches no weight (the fix: keep the re-encoded code attached and detach
only the target)."""
import torch
import torch.nn.functional as F
from torch import nn


class ft_netAB(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.model = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2))
        self.fc = nn.Linear(32, dim)

    def forward(self, x):
        f = self.model(x).flatten(1)
        f = f.detach()  # <- cut_term
        return self.fc(f.detach()), f


class Generator(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.enc_content = nn.Conv2d(1, 8, 3, padding=1)
        self.mlp = nn.Linear(dim, 8)
        self.dec = nn.Conv2d(8, 3, 3, padding=1)

    def decode(self, content, f):
        return torch.tanh(self.dec(content * self.mlp(f)[:, :, None, None]))


torch.manual_seed(0)
id_a, gen = ft_netAB(), Generator()
gen_opt = torch.optim.Adam(gen.parameters(), lr=1e-4)
x_a, x_b = torch.rand(4, 3, 16, 16), torch.rand(4, 3, 16, 16)
for it in range(2):
    _, f_a = id_a(x_a)
    c_b = gen.enc_content(x_b.mean(1, keepdim=True))
    x_ba = gen.decode(c_b, f_a)
    _, f_a_recon = id_a(x_ba)
    loss_gen_recon_x = F.l1_loss(gen.decode(gen.enc_content(x_a.mean(1, keepdim=True)), f_a), x_a)
    loss_gen_recon_f_a = F.l1_loss(f_a_recon, f_a)
    loss = loss_gen_recon_x + loss_gen_recon_f_a
    gen_opt.zero_grad()
    loss.backward()
    gen_opt.step()
    print(f"iter {it}: recon_f_a {loss_gen_recon_f_a.item():.4f}, requires grad: {loss_gen_recon_f_a.requires_grad}")
