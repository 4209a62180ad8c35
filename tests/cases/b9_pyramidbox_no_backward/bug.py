"""PyramidBox training (Goingqs/PyramidBox#7, "No 'loss.backward()' during training?"): the loop computes the
localisation and confidence losses, zeroes the gradients and calls optimizer.step(), but never loss.backward(), so
every step runs on empty gradients and the detector never learns."""
import torch
import torch.nn.functional as F
from torch import nn


class TinyDetector(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())
        self.loc, self.conf = nn.Conv2d(8, 4, 1), nn.Conv2d(8, 2, 1)

    def forward(self, x):
        h = self.body(x)
        return self.loc(h).flatten(2).transpose(1, 2), self.conf(h).flatten(2).transpose(1, 2)


torch.manual_seed(0)
net = TinyDetector()
optimizer = torch.optim.SGD(net.parameters(), lr=1e-2, momentum=0.9, weight_decay=0.0)
images = torch.randn(4, 3, 8, 8)
loc_t, conf_t = torch.randn(4, 64, 4), torch.randint(0, 2, (4, 64))
for iteration in range(20):
    loc_p, conf_p = net(images)
    loss_l = F.smooth_l1_loss(loc_p, loc_t)
    loss_c = F.cross_entropy(conf_p.reshape(-1, 2), conf_t.reshape(-1))
    loss = loss_l + loss_c
    optimizer.zero_grad()
    optimizer.step()  # <- optimizer
    if iteration % 5 == 0 or iteration == 19:
        print(f"iter {iteration}: loss {loss.item():.4f}")
