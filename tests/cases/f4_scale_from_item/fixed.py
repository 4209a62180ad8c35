import torch
from torch import nn

torch.manual_seed(0)
log_scale = torch.zeros(1, requires_grad=True)
model = nn.Linear(4, 1)
opt = torch.optim.Adam([log_scale, *model.parameters()], lr=1e-2)
x, y = torch.randn(16, 4), torch.randn(16, 1)
for _ in range(2):
    scale = 2.0 ** log_scale + 0.5
    pred = model(x) * scale
    loss = nn.functional.mse_loss(pred, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
