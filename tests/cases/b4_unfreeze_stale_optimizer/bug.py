"""Gradual unfreezing with a stale optimizer (theneuralbase's 'Freezing base model weights' lesson):
the optimizer was built from the trainable parameters while the backbone was frozen; unfreezing
layer4 later gives it gradients, but the optimizer's param_groups never include it."""
import torch
from torch import nn


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer3 = nn.Sequential(nn.Linear(12, 12), nn.ReLU())
        self.layer4 = nn.Sequential(nn.Linear(12, 12), nn.ReLU())
        self.fc = nn.Linear(12, 5)

    def forward(self, x):
        return self.fc(self.layer4(self.layer3(x)))


torch.manual_seed(0)
model = Backbone()
for param in model.parameters():
    param.requires_grad = False
model.fc = nn.Linear(12, 10)
optimizer = torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), lr=1e-3)  # <- optimizer
x, y = torch.randn(32, 12), torch.randint(0, 10, (32,))
for epoch in range(4):
    if epoch == 2:
        for param in model.layer4.parameters():
            param.requires_grad = True
        before = model.layer4[0].weight.detach().clone()
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
print("layer4 changed after unfreezing:", not torch.equal(before, model.layer4[0].weight))
