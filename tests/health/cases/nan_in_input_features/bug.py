import torch

torch.manual_seed(0)

rows = [[1.0, 2.0, 3.0], [4.0, float("nan"), 6.0], [7.0, 8.0, 9.0], [1.5, 2.5, 3.5]]
x = torch.tensor(rows)
y = torch.tensor([[1.0], [2.0], [3.0], [4.0]])
model = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(2):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)  # <- nan
    loss.backward()
    opt.step()
    print(epoch, loss.item())
