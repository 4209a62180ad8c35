"""The fixed twin: the convolution is built once in __init__ and registered (wangyida/softpool#11)."""
import torch
import torch.nn.functional as F
from torch import nn


class SoftPool(nn.Module):
    def __init__(self, regions=4, cabins=8, size_feat=8):
        super().__init__()
        self.regions, self.num_cabin = regions, cabins
        self.conv2d_1 = nn.Conv2d(size_feat, size_feat, kernel_size=(1, 3), stride=(1, 1))

    def forward(self, x):
        return self.conv2d_1(x).amax(dim=(2, 3))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Conv2d(3, 8, 1)
        self.pool = SoftPool()
        self.cls = nn.Linear(8, 2)

    def forward(self, x):
        return self.cls(self.pool(self.enc(x)))


torch.manual_seed(0)
net = Net()
optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
x, y = torch.randn(16, 3, 4, 8), torch.randint(0, 2, (16,))
for step in range(30):
    loss = F.cross_entropy(net(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 10 == 0 or step == 29:
        print(f"step {step}: loss {loss.item():.4f}")
print("checkpoint keys:", sorted(net.state_dict()))
