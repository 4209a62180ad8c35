"""FairMOT's uncertainty-weighted multi-task loss (ifzhang/FairMOT#19): the learnable task weights s_det and s_id
are nn.Parameters of the loss module, but the optimizer is built from model.parameters() only; they get a gradient
at every step and are never updated, so the detection and re-ID losses keep their initial weighting."""
import torch
import torch.nn.functional as F
from torch import nn


class MotLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.s_det = nn.Parameter(-1.85 * torch.ones(1))
        self.s_id = nn.Parameter(-1.05 * torch.ones(1))

    def forward(self, outputs, batch):
        det_loss = F.mse_loss(outputs["hm"], batch["hm"])
        id_loss = F.cross_entropy(outputs["id"], batch["ids"])
        loss = torch.exp(-self.s_det) * det_loss + torch.exp(-self.s_id) * id_loss + (self.s_det + self.s_id)
        return 0.5 * loss


class MotTrainer:
    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer
        self.loss = MotLoss()

    def train_step(self, images, batch):
        feats = self.model["backbone"](images)
        outputs = {"hm": self.model["hm"](feats), "id": self.model["id"](feats)}
        loss = self.loss(outputs, batch)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()


torch.manual_seed(0)
model = nn.ModuleDict({"backbone": nn.Sequential(nn.Linear(16, 32), nn.ReLU()), "hm": nn.Linear(32, 4), "id": nn.Linear(32, 10)})
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)  # <- optimizer
trainer = MotTrainer(model, optimizer)
images = torch.randn(32, 16)
batch = {"hm": torch.rand(32, 4), "ids": torch.randint(0, 10, (32,))}
for epoch in range(10):
    loss = trainer.train_step(images, batch)
print(f"loss {loss:.4f}; s_det {trainer.loss.s_det.item():.3f} s_id {trainer.loss.s_id.item():.3f}")
