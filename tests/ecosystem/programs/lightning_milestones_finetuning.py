"""Lightning's transfer-learning example in miniature: a BaseFinetuning callback (the
``MilestonesFinetuning`` of ``examples/pytorch/domain_templates/computer_vision_fine_tuning.py``,
https://lightning.ai/docs/pytorch/stable/api/lightning.pytorch.callbacks.BaseFinetuning.html).

Patterns kept:
- ``freeze_before_training`` freezes the whole feature extractor (BatchNorm included, ``train_bn=False``),
  and ``configure_optimizers`` builds the optimizer from ``filter(lambda p: p.requires_grad, ...)`` so at
  first it only holds the head;
- at epoch 1 the last backbone block is unfrozen and added to the optimizer as a new param group
  (``unfreeze_and_add_param_group``, lr divided by ``initial_denom_lr``), at epoch 2 the middle block;
  BatchNorm is frozen with the block (``freeze(train_bn=False)``) and unfrozen with ``train_bn=True`` so its
  affine parameters join the new param group together with the convolution they follow;
- the stem stays frozen for the whole run on purpose (as the example keeps the early ResNet layers);
- the optimizer therefore grows while training runs, one param group per milestone.
"""
import os
import warnings

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import lightning as L
from lightning.pytorch.callbacks import BaseFinetuning

# The warning the Lightning docs tell you to silence for a toy in-memory dataset, and one that
# Lightning's own CombinedLoader raises on this torch version (torch.utils._pytree.LeafSpec).
warnings.filterwarnings("ignore", ".*does not have many workers.*")
warnings.filterwarnings("ignore", ".*isinstance\\(treespec, LeafSpec\\).*")


def conv_block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())


class MilestonesFinetuning(BaseFinetuning):
    def __init__(self, milestones=(1, 2)):
        super().__init__()
        self.milestones = milestones

    def freeze_before_training(self, pl_module):
        # BatchNorm frozen too (train_bn=False) ...
        self.freeze(modules=pl_module.feature_extractor, train_bn=False)

    def finetune_function(self, pl_module, epoch, optimizer):
        if epoch == self.milestones[0]:
            # unfreeze the last block
            self.unfreeze_and_add_param_group(
                modules=pl_module.feature_extractor[-1:], optimizer=optimizer, train_bn=True
            )
        elif epoch == self.milestones[1]:
            # unfreeze the middle block; the stem (feature_extractor[0]) stays frozen
            self.unfreeze_and_add_param_group(
                modules=pl_module.feature_extractor[1:-1], optimizer=optimizer, train_bn=True
            )


class TransferLearningModel(L.LightningModule):
    def __init__(self, num_classes=4, lr=1e-2):
        super().__init__()
        self.lr = lr
        self.feature_extractor = nn.Sequential(conv_block(3, 8), conv_block(8, 16), conv_block(16, 16))
        self.fc = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, num_classes))

    def forward(self, x):
        x = self.feature_extractor(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        print(f"epoch {self.current_epoch} step {self.global_step} loss {loss.item():.6f} "
              f"param_groups {len(self.trainer.optimizers[0].param_groups)}")
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(filter(lambda p: p.requires_grad, self.parameters()), lr=self.lr)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    x = torch.randn(8, 3, 16, 16)
    y = torch.randint(0, 4, (8,))
    loader = DataLoader(TensorDataset(x, y), batch_size=8)
    model = TransferLearningModel()
    trainer = L.Trainer(
        max_epochs=3,
        accelerator="cpu",
        devices=1,
        callbacks=[MilestonesFinetuning(milestones=(1, 2))],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model, loader)
    if os.environ.get("REALWORLD_STATE"):
        torch.save({k: v for k, v in model.state_dict().items()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
