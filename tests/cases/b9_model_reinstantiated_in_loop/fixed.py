"""The fixed twin: the model instance stays the one the optimizer holds (duoke360.com/post/34678)."""
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
    optimizer.step()
    if epoch % 3 == 0 or epoch == 9:
        print(f"epoch {epoch}: loss {loss.item():.4f}")
