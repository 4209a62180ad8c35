"""Lightning manual optimization with two optimizers, gradient accumulation, manual gradient clipping and a
manually stepped LR scheduler, written as the "Manual Optimization" page shows it
(https://lightning.ai/docs/pytorch/stable/model/manual_optimization.html: sections "Gradient Accumulation",
"Use Multiple Optimizers (like GANs)", "Gradient Clipping", "Learning Rate Scheduling").

Patterns kept:
- ``self.automatic_optimization = False``; the loss is scaled by 1/N and ``manual_backward`` runs every
  batch while ``opt.step()`` / ``opt.zero_grad()`` run only every N batches (so between steps the
  gradients just accumulate);
- ``toggle_optimizer`` sets ``requires_grad=False`` on every parameter that is not in the toggled optimizer:
  the probe loss is computed on the encoder's features *without* ``detach()``, yet the encoder gets no
  gradient from it, on purpose (a linear probe that must not shape the features); ``untoggle_optimizer``
  restores the flags;
- ``self.clip_gradients(opt, gradient_clip_val=..., gradient_clip_algorithm="norm")`` before each step;
- the schedulers from ``self.lr_schedulers()`` stepped by hand after each real optimizer step.
"""
import os
import warnings

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import lightning as L

warnings.filterwarnings("ignore", ".*does not have many workers.*")
# Raised by Lightning's own CombinedLoader on this torch version (torch.utils._pytree.LeafSpec).
warnings.filterwarnings("ignore", ".*isinstance\\(treespec, LeafSpec\\).*")

ACCUMULATE = 2


class AutoencoderWithProbe(L.LightningModule):
    def __init__(self, dim=12, hidden=6, num_classes=3):
        super().__init__()
        self.automatic_optimization = False
        self.encoder = nn.Sequential(nn.Linear(dim, 16), nn.Tanh(), nn.Linear(16, hidden))
        self.decoder = nn.Sequential(nn.Linear(hidden, 16), nn.Tanh(), nn.Linear(16, dim))
        self.probe = nn.Linear(hidden, num_classes)

    def training_step(self, batch, batch_idx):
        x, y = batch
        opt_ae, opt_probe = self.optimizers()
        sched_ae, sched_probe = self.lr_schedulers()
        do_step = (batch_idx + 1) % ACCUMULATE == 0

        # autoencoder: reconstruction loss, only encoder/decoder parameters require grad
        self.toggle_optimizer(opt_ae)
        z = self.encoder(x)
        recon_loss = F.mse_loss(self.decoder(z), x) / ACCUMULATE
        self.manual_backward(recon_loss)
        if do_step:
            self.clip_gradients(opt_ae, gradient_clip_val=1.0, gradient_clip_algorithm="norm")
            opt_ae.step()
            opt_ae.zero_grad()
            sched_ae.step()
        self.untoggle_optimizer(opt_ae)

        # linear probe: the encoder is not trainable while the probe optimizer is toggled
        self.toggle_optimizer(opt_probe)
        z = self.encoder(x)
        probe_loss = F.cross_entropy(self.probe(z), y) / ACCUMULATE
        self.manual_backward(probe_loss)
        if do_step:
            self.clip_gradients(opt_probe, gradient_clip_val=1.0, gradient_clip_algorithm="norm")
            opt_probe.step()
            opt_probe.zero_grad()
            sched_probe.step()
        self.untoggle_optimizer(opt_probe)

        print(f"batch {batch_idx} recon {recon_loss.item() * ACCUMULATE:.6f} "
              f"probe {probe_loss.item() * ACCUMULATE:.6f} step {do_step}")

    def configure_optimizers(self):
        opt_ae = torch.optim.Adam(list(self.encoder.parameters()) + list(self.decoder.parameters()), lr=1e-2)
        opt_probe = torch.optim.SGD(self.probe.parameters(), lr=0.1, momentum=0.9)
        sched_ae = torch.optim.lr_scheduler.StepLR(opt_ae, step_size=1, gamma=0.5)
        sched_probe = torch.optim.lr_scheduler.StepLR(opt_probe, step_size=1, gamma=0.5)
        return [opt_ae, opt_probe], [sched_ae, sched_probe]


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    x = torch.randn(16, 12)
    y = torch.randint(0, 3, (16,))
    loader = DataLoader(TensorDataset(x, y), batch_size=4)
    model = AutoencoderWithProbe()
    trainer = L.Trainer(
        max_epochs=1,
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model, loader)
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
