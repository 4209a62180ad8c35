"""A memory module for anomaly detection by distillation (SimonThomine/RememberingNormality#7): the memory keys
and values are made with torch.randn(L, channel).to(device), plain tensors rather than nn.Parameter, so they are
not in model.parameters() and keep their random initial values; adding the module does not improve anything."""
import torch
import torch.nn.functional as F
from torch import nn

device = "cpu"


class NormalityMemory(nn.Module):
    def __init__(self, L=10, channel=16):
        super().__init__()
        self.keys = torch.randn(L, channel).to(device)  # <- non_parameter_tensor
        self.values = torch.randn(L, channel).to(device)

    def forward(self, feats):
        attention = (feats @ self.keys.t() / feats.size(-1) ** 0.5).softmax(-1)
        return attention @ self.values


torch.manual_seed(0)
teacher = nn.Linear(8, 16).requires_grad_(False)
student = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16))
memory = NormalityMemory()
model = nn.ModuleDict({"student": student, "memory": memory})
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randn(64, 8)
keys_before = memory.keys.clone()
for step in range(20):
    feats = student(x)
    loss = F.mse_loss(feats + memory(feats), teacher(x))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"loss {loss.item():.4f}; memory keys changed: {not torch.equal(keys_before, memory.keys)}")
