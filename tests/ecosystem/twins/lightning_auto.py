"""Twin of programs/lightning_auto.py with one cut: the encoder's output is detached in
forward, so the encoder, which configure_optimizers hands to Adam, never learns."""
import os

import lightning as L
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchmetrics
from torch.utils.data import DataLoader, TensorDataset


class LitClassifier(L.LightningModule):
    def __init__(self, lr=1e-2):
        super().__init__()
        self.save_hyperparameters()
        self.encoder = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16))
        self.head = nn.Linear(16, 3)
        self.val_acc = torchmetrics.Accuracy(task="multiclass", num_classes=3)

    def forward(self, x):
        return self.head(self.encoder(x).detach())  # <- detach

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss)
        print(f"step {self.global_step} loss {loss.item():.6f}")
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.val_acc(logits, y)
        self.log("val_acc", self.val_acc, on_epoch=True)

    def on_validation_epoch_end(self):
        print(f"val_acc {self.trainer.callback_metrics['val_acc'].item():.3f}")

    def configure_optimizers(self):
        optimizer = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.9)
        return {"optimizer": optimizer, "lr_scheduler": scheduler}


def main():
    L.seed_everything(0, verbose=False)
    torch.set_num_threads(1)
    data = TensorDataset(torch.randn(16, 8), torch.randint(0, 3, (16,)))
    model = LitClassifier()
    trainer = L.Trainer(accelerator="cpu", devices=1, max_steps=4, enable_checkpointing=False, logger=False,
                        enable_progress_bar=False, enable_model_summary=False, val_check_interval=2,
                        num_sanity_val_steps=0)
    trainer.fit(model, DataLoader(data, batch_size=4), DataLoader(data, batch_size=8))
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
