import torch

torch.manual_seed(0)

model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(6, 4) * 100  # unnormalised input
y = torch.zeros(6, 1)
y[:3] = 1
loss = torch.nn.functional.binary_cross_entropy_with_logits(model(x), y)
loss.backward()
opt.step()
print(loss.item())
