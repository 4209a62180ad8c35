"""LipFD, lip-sync deepfake detection (AaronComo/LipFD#18): with `opt.fix_encoder` the trainer means to freeze the
CLIP encoder and train the rest, but both branches of its loop set `p.requires_grad = False`, so nothing is left to
train and `loss.backward()` raises "RuntimeError: element 0 of tensors does not require grad and does not have a
grad_fn". The reporter: "I fixed it by changing LipFD/trainer/trainer.py line 37 into p.requires_grad = True, I am
pretty sure it is a typo here"."""
import torch
from torch import nn


class LipFD(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(3, 8, 4, stride=4), nn.GELU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.fc = nn.Linear(16, 1)

    def get_features(self, x):
        return self.encoder(x)

    def forward(self, crops, features):
        return self.fc(torch.cat([self.backbone(crops), features], dim=1))


class Trainer:
    def __init__(self, fix_encoder=True):
        self.model = LipFD()
        if fix_encoder:
            for name, p in self.model.named_parameters():
                if name.split(".")[0] in ["encoder"]:
                    p.requires_grad = False
                else:
                    p.requires_grad = False  # <- autograd_error
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=2e-4, betas=(0.9, 0.999), weight_decay=0.0)
        self.criterion = nn.BCEWithLogitsLoss()

    def optimize_parameters(self, image, crops, label):
        self.features = self.model.get_features(image)
        self.output = self.model(crops, self.features).view(-1)
        self.loss = self.criterion(self.output, label)
        self.optimizer.zero_grad()
        self.loss.backward()
        self.optimizer.step()


torch.manual_seed(0)
trainer = Trainer(fix_encoder=True)
for step in range(2):
    image, crops, label = torch.rand(4, 3, 16, 16), torch.rand(4, 3, 8, 8), torch.randint(0, 2, (4,)).float()
    trainer.optimize_parameters(image, crops, label)
print(f"fc grad set: {trainer.model.fc.weight.grad is not None}")
