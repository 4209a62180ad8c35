import torch

torch.manual_seed(0)

model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
raw = torch.randn(5, 3)
raw[:, 2] = 0.0  # a feature that is constant in this batch
y = torch.randn(5, 1)
mean, std = raw.mean(0, keepdim=True), raw.std(0, keepdim=True)
x = (raw - mean) / std  # <- nan
loss = torch.nn.functional.mse_loss(model(x), y)
loss.backward()
opt.step()
print(loss.item())
