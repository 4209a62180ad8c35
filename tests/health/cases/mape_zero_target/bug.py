import torch

torch.manual_seed(0)

model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(3, 2)
target = torch.tensor([[0.0], [1.0], [2.0]])


def mape(preds, target):
    return (torch.abs(target - preds) / torch.abs(target)).mean() * 100  # <- nan


for step in range(3):
    opt.zero_grad()
    loss = mape(model(x), target)
    loss.backward()
    opt.step()
    print(step, loss.item())
