import torch

torch.manual_seed(0)

model = torch.nn.Linear(4, 2)
torch.nn.init.zeros_(model.weight)
torch.nn.init.zeros_(model.bias)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
x = torch.randn(8, 4)
target = torch.zeros(8, 2)
target[4:] = torch.randn(4, 2)


def gps_loss(pred, target):
    lx, ly = (pred - target).unbind(-1)
    return torch.mean(torch.sqrt(torch.square(lx) + torch.square(ly)))  # <- nan


for step in range(2):
    opt.zero_grad()
    loss = gps_loss(model(x), target)
    loss.backward()
    opt.step()
    print(step, loss.item())
