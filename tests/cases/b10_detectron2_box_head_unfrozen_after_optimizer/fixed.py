"""The fixed twin: the unfrozen box head is added to the optimizer as a new parameter group (facebookresearch/detectron2#2486)."""
import torch
import torch.nn.functional as F
from torch import nn


class GeneralizedRCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.box_head = nn.Linear(8, 16)
        self.box_predictor = nn.Linear(16, 5)

    def forward(self, images):
        return self.box_predictor(F.relu(self.box_head(self.backbone(images))))

    def unfreeze_box_head(self):
        for p in self.box_head.parameters():
            p.requires_grad = True


torch.manual_seed(0)
model = GeneralizedRCNN()
for p in model.box_head.parameters():
    p.requires_grad = False
optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.05, momentum=0.9)
images, targets = torch.randn(8, 3, 16, 16), torch.randn(8, 5)
for iteration in range(10):
    if iteration == 4:
        model.unfreeze_box_head()
        optimizer.add_param_group({"params": list(model.box_head.parameters())})
        head_at_unfreeze = model.box_head.weight.detach().clone()
    loss = F.smooth_l1_loss(model(images), targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"loss {loss.item():.4f}; box head has a grad: {model.box_head.weight.grad is not None}; "
      f"box head changed since unfreezing: {not torch.equal(model.box_head.weight, head_at_unfreeze)}")
