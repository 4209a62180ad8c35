"""Memory Aware Synapses for continual learning (wannabeOG/MAS-PyTorch#1): when a new task starts, the layers
listed as frozen are set to require grad and all the others are switched off, the inverse of what was meant; the
new task's classifier and the shared layers that should adapt never change, while the frozen layers do."""
import torch
import torch.nn.functional as F
from torch import nn


class SharedModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())
        self.classifier = nn.Linear(32, 4)

    def forward(self, x):
        return self.classifier(self.features(x))


def create_freeze_layers(model, no_of_layers=2):
    return [name for name, _ in model.named_parameters()][:no_of_layers]


torch.manual_seed(0)
model = SharedModel()
freeze_layers = create_freeze_layers(model)
for name, param in model.named_parameters():
    if name in freeze_layers:
        param.requires_grad = True
    else:
        param.requires_grad = False  # <- no_update
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
x, y = torch.randn(64, 20), torch.randint(0, 4, (64,))
head_before = model.classifier.weight.detach().clone()
for epoch in range(10):
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"loss {loss.item():.4f}; new task classifier changed: {not torch.equal(head_before, model.classifier.weight)}")
