"""StyleMapGAN's generator step (naver-ai/StyleMapGAN#16): g_loss.backward() runs first, then
(w_rec_loss * lambda_w_rec_loss).backward() on the latent reconstruction loss, which goes back through the same
generated image; the first backward freed that graph, so the second raises "Trying to backward through the graph a
second time" (the reporter's workaround: one backward on g_loss + w_rec_loss)."""
import torch
import torch.nn.functional as F
from torch import nn


def requires_grad(model, flag=True):
    for p in model.parameters():
        p.requires_grad = flag


class Model(nn.Module):
    def __init__(self, latent=8, image=12):
        super().__init__()
        self.mapping_network = nn.Sequential(nn.Linear(latent, 16), nn.LeakyReLU(0.2), nn.Linear(16, 6))
        self.generator = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, image))
        self.encoder = nn.Sequential(nn.Linear(image, 16), nn.ReLU(), nn.Linear(16, 6))
        self.discriminator = nn.Sequential(nn.Linear(image, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))

    def forward(self, real_img, mode, batch=4):
        stylecode = self.mapping_network(torch.randn(batch, 8))
        fake_img = self.generator(stylecode)
        if mode == "G":
            adv_loss = F.softplus(-self.discriminator(fake_img))
            w_rec_loss = F.mse_loss(self.encoder(fake_img), stylecode, reduction="none").mean(1)
            return adv_loss, w_rec_loss, stylecode
        real_pred, fake_pred = self.discriminator(real_img), self.discriminator(fake_img.detach())
        return F.softplus(-real_pred).mean() + F.softplus(fake_pred).mean()


torch.manual_seed(0)
model = Model()
g_optim = torch.optim.Adam(list(model.mapping_network.parameters()) + list(model.generator.parameters()), lr=2e-3)
e_optim = torch.optim.Adam(model.encoder.parameters(), lr=2e-3)
d_optim = torch.optim.Adam(model.discriminator.parameters(), lr=2e-3)
lambda_adv_loss, lambda_w_rec_loss = 1.0, 1.0
real_img = torch.randn(4, 12)
for idx in range(3):
    requires_grad(model.discriminator, True)
    d_loss = model(real_img, "D")
    d_optim.zero_grad()
    d_loss.backward()
    d_optim.step()

    requires_grad(model.discriminator, False)
    adv_loss, w_rec_loss, stylecode = model(None, "G")
    adv_loss, w_rec_loss = adv_loss.mean(), w_rec_loss.mean()
    g_loss = adv_loss * lambda_adv_loss
    g_optim.zero_grad()
    e_optim.zero_grad()
    g_loss.backward()  # <- autograd_error
    (w_rec_loss * lambda_w_rec_loss).backward()
    g_optim.step()
    e_optim.step()
    print(f"iter {idx}: d_loss {d_loss.item():.4f} g_loss {g_loss.item():.4f} w_rec {w_rec_loss.item():.4f}")
