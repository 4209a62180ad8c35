"""Hidden layers kept in a plain Python list (the 'Can you spot it?' bug of engineermaxxing's PyTorch
internals lesson): the list bypasses nn.Module registration, so only the head is in parameters() and
the hidden layers get gradients but never learn."""
import torch
from torch import nn


class MyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.Linear(64, 32), nn.Linear(32, 16)]  # <- non_parameter_tensor
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return self.head(x)


torch.manual_seed(0)
model = MyModel()
print("parameters:", [n for n, _ in model.named_parameters()])
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
for step in range(3):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
