"""thecodeforge.io, "Building a Neural Network in PyTorch" (ml-ai/pytorch-neural-network): its list of silent bugs
under "Weights do not change after a training step": a layer defined inside forward() gets new, untrained weights on
every pass, so the optimizer never holds them and whatever they learn is thrown away at the next call. The fix: define
layers in __init__, data flow in forward."""
import torch
import torch.nn.functional as F
from torch import nn


class TabularNet(nn.Module):
    def __init__(self, in_features=20, hidden=64, classes=3):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.hidden, self.classes = hidden, classes

    def forward(self, x):
        x = F.relu(self.fc1(x))
        self.classifier = nn.Linear(self.hidden, self.classes)  # <- module_in_forward
        return self.classifier(x)


torch.manual_seed(0)
model = TabularNet()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
x, y = torch.randn(32, 20), torch.randint(0, 3, (32,))
for epoch in range(3):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
in_optimizer = {id(p) for group in optimizer.param_groups for p in group["params"]}
print("classifier.weight in the optimizer:", id(model.classifier.weight) in in_optimizer)
