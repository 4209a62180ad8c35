"""PyTorch "parameters do not change" (duoke360.com/post/34678, cause 2): the training loop builds a fresh
nn.Linear after backward(), so optimizer.step() updates the old layer while every later forward uses a new one the
optimizer never saw; the loss never improves."""
import torch

torch.manual_seed(0)
model = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(32, 3)
y = x @ torch.tensor([[1.0], [-2.0], [0.5]])
for epoch in range(10):
    optimizer.zero_grad()
    output = model(x)
    loss = ((output - y) ** 2).mean()
    loss.backward()
    model = torch.nn.Linear(3, 1)  # <- optimizer
    optimizer.step()
    if epoch % 3 == 0 or epoch == 9:
        print(f"epoch {epoch}: loss {loss.item():.4f}")
