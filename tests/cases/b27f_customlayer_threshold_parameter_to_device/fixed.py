"""pytorch/pytorch#39062, "regarding to('cuda') in init", https://github.com/pytorch/pytorch/issues/39062: a
custom layer sets self.threshold = nn.Parameter(torch.randn(1)).to('cuda') in __init__, and after
model = nn.Sequential(CustomLayer()).to('cuda') the reporter finds list(model.parameters()) empty: the network
trains, but the threshold is not a parameter and never learns. Why (the answer, zou3519): .to() on an
nn.Parameter returns a new tensor, a non-leaf copy, not a Parameter, so the module registers nothing, the
optimizer never holds it, and the gradient lands on the orphaned Parameter behind it. Fix (the answer's):
nn.Parameter(torch.randn(1, device=...)) - create the tensor where it must live and wrap that. A dtype change
stands in for the move to the GPU (this machine has none; .to() to the device a tensor is already on returns
the tensor itself)."""
import torch
import torch.nn as nn

torch.manual_seed(0)
device, dtype = "cpu", torch.float64


class CustomLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.threshold = nn.Parameter(torch.randn(1, device=device, dtype=dtype))

    def forward(self, input):
        return torch.relu(input - self.threshold)  # soft threshold: only values above it pass


model = nn.Sequential(CustomLayer(), nn.Linear(4, 1)).to(device, dtype)
print("parameters:", [name for name, _ in model.named_parameters()])
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(256, 4, dtype=dtype) * 2
y = torch.relu(x - 0.5).sum(1, keepdim=True)  # the data were made with a threshold of 0.5
before = model[0].threshold.item()
for step in range(200):
    loss = nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"loss {loss.item():.4f}; threshold {before:.4f} -> {model[0].threshold.item():.4f}")
