"""The fixed twin: the best weights are deep-copied (pytorch/tutorials#188)."""
import copy

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(4)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
w = torch.randn(10)
x_train, x_val = torch.randn(32, 10), torch.randn(64, 10)
y_train, y_val = (x_train @ w > 0).long(), (x_val @ w > 0).long()
y_train[:8] = 1 - y_train[:8]  # noisy labels: the model overfits after its best epoch
best_acc, best_model_wts = 0.0, model.state_dict()
for epoch in range(25):
    loss = F.cross_entropy(model(x_train), y_train)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    with torch.no_grad():
        acc = (model(x_val).argmax(1) == y_val).float().mean().item()
    if acc > best_acc:
        best_acc = acc
        best_model_wts = copy.deepcopy(model.state_dict())
model.load_state_dict(best_model_wts)
with torch.no_grad():
    final = (model(x_val).argmax(1) == y_val).float().mean().item()
print(f"best val acc {best_acc:.3f}, val acc of the loaded 'best' model {final:.3f}")
