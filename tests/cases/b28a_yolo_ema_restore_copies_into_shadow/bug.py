"""MultimediaTechLab/YOLO (WongKinYiu/YOLO) issue #97, "Critical EMA implementation bug, resulting in dead
training", https://github.com/MultimediaTechLab/YOLO/issues/97: ModelTrainer never calls ema.update(), so the
shadow keeps the weights training started from; at every epoch's checkpoint ema.apply_shadow() copies that shadow
into the model, and ema.restore() copies the model into the shadow instead of back, so the trained weights are
lost and every epoch starts again from the initial weights: the saved model never improves. The reporter's fix
(PR #104): apply_shadow() keeps a backup that restore() copies back into the model, and train_one_batch() calls
ema.update() again. The detector is shrunk to two convs; COCO to seeded random batches; AMP as in solver.py
(GradScaler/autocast, on CPU in bfloat16)."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)


class ExponentialMovingAverage:
    def __init__(self, model: torch.nn.Module, decay: float):
        self.model = model
        self.decay = decay
        self.shadow = {name: param.clone().detach() for name, param in model.named_parameters()}

    def update(self):
        """Update the shadow parameters using the current model parameters."""
        for name, param in self.model.named_parameters():
            new_average = (1.0 - self.decay) * param.data + self.decay * self.shadow[name]
            self.shadow[name] = new_average.clone()

    def apply_shadow(self):
        """Apply the shadow parameters to the model."""
        for name, param in self.model.named_parameters():
            param.data.copy_(self.shadow[name])

    def restore(self):
        """Restore the original parameters from the shadow."""
        for name, param in self.model.named_parameters():
            self.shadow[name].copy_(param.data)  # <- state_dict_reload


class ModelTrainer:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        self.scaler = torch.amp.GradScaler("cpu")
        self.ema = ExponentialMovingAverage(model, decay=0.995)
        self.checkpoints = []

    def train_one_batch(self, images, targets):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = F.mse_loss(self.model(images).float(), targets)
        self.optimizer.zero_grad()
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return loss.item()

    def train_one_epoch(self, dataloader):
        return sum(self.train_one_batch(images, targets) for images, targets in dataloader) / len(dataloader)

    def save_checkpoint(self, epoch):
        checkpoint = {"epoch": epoch, "model_state_dict": {k: v.clone() for k, v in self.model.state_dict().items()}}
        if self.ema:
            self.ema.apply_shadow()
            checkpoint["model_state_dict_ema"] = {k: v.clone() for k, v in self.model.state_dict().items()}
            self.ema.restore()
        self.checkpoints.append(checkpoint)

    def solve(self, dataloader, epochs):
        for epoch in range(epochs):
            epoch_loss = self.train_one_epoch(dataloader)
            print(f"epoch {epoch}: loss {epoch_loss:.4f}")
            self.save_checkpoint(epoch)


model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.SiLU(), nn.Conv2d(8, 5, 1))
initial = {k: v.clone() for k, v in model.state_dict().items()}
dataloader = [(torch.randn(4, 3, 16, 16), torch.randn(4, 5, 16, 16) * 0.1) for _ in range(6)]
trainer = ModelTrainer(model)
trainer.solve(dataloader, epochs=3)
print("weights after training equal the initial ones:",
      all(torch.equal(initial[k], v) for k, v in model.state_dict().items()))
