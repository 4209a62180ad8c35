import torch

torch.manual_seed(0)

model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(6, 4) * 100  # unnormalised input
y = torch.zeros(6, 1)
y[:3] = 1
guess = torch.sigmoid(model(x))
loss = -(y * torch.log(guess) + (1 - y) * torch.log(1 - guess)).mean()  # <- nan
loss.backward()
opt.step()
print(loss.item())
