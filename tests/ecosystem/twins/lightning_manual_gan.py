"""Twin of programs/lightning_manual_gan.py with one cut: the generator's loss is computed
on fake.detach() (copied from the discriminator step), so the generator gets no gradient."""
import os

import lightning as L
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class GAN(L.LightningModule):
    def __init__(self, latent_dim=4):
        super().__init__()
        self.automatic_optimization = False
        self.latent_dim = latent_dim
        self.generator = nn.Sequential(nn.Linear(latent_dim, 16), nn.LeakyReLU(0.2), nn.Linear(16, 8), nn.Tanh())
        self.discriminator = nn.Sequential(nn.Linear(8, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))

    def forward(self, z):
        return self.generator(z)

    def training_step(self, batch):
        (real,) = batch
        g_opt, d_opt = self.optimizers()
        z = torch.randn(real.size(0), self.latent_dim)
        ones, zeros = torch.ones(real.size(0), 1), torch.zeros(real.size(0), 1)

        self.toggle_optimizer(g_opt)
        fake = self(z)
        g_loss = F.binary_cross_entropy_with_logits(self.discriminator(fake.detach()), ones)  # <- detach
        self.manual_backward(g_loss)
        g_opt.step()
        g_opt.zero_grad()
        self.untoggle_optimizer(g_opt)

        self.toggle_optimizer(d_opt)
        real_loss = F.binary_cross_entropy_with_logits(self.discriminator(real), ones)
        fake_loss = F.binary_cross_entropy_with_logits(self.discriminator(fake.detach()), zeros)
        d_loss = (real_loss + fake_loss) / 2
        self.manual_backward(d_loss)
        d_opt.step()
        d_opt.zero_grad()
        self.untoggle_optimizer(d_opt)
        self.log_dict({"g_loss": g_loss, "d_loss": d_loss})
        print(f"step {self.global_step} g_loss {g_loss.item():.6f} d_loss {d_loss.item():.6f}")

    def configure_optimizers(self):
        g_opt = torch.optim.Adam(self.generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
        d_opt = torch.optim.Adam(self.discriminator.parameters(), lr=2e-4, betas=(0.5, 0.999))
        return g_opt, d_opt


def main():
    L.seed_everything(0, verbose=False)
    torch.set_num_threads(1)
    model = GAN()
    trainer = L.Trainer(accelerator="cpu", devices=1, max_epochs=1, limit_train_batches=3,
                        enable_checkpointing=False, logger=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(model, DataLoader(TensorDataset(torch.randn(12, 8).tanh()), batch_size=4))
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
