"""The fixed twin: the inside test is soft (sigmoids of the distances to the edges), so the IoU has a gradient (pytorch/pytorch#2774)."""
import numpy
import torch
from torch import nn
from torch.nn.modules.loss import _Loss


class IoU_real(_Loss):
    def __init__(self, bounds=(32, 32)):
        super().__init__()
        grid = numpy.mgrid[0:bounds[0], 0:bounds[1]]
        self.grid = torch.from_numpy(numpy.concatenate((grid[0][..., numpy.newaxis], grid[1][..., numpy.newaxis]),
                                                       axis=-1)).float()

    def get_mask(self, rect):
        gx, gy = self.grid[..., 0], self.grid[..., 1]
        inside = torch.sigmoid(gx - rect[0]) * torch.sigmoid(rect[2] - gx) * torch.sigmoid(gy - rect[1]) * torch.sigmoid(rect[3] - gy)
        return inside

    def forward(self, input, target):
        losses = []
        for rect_in, rect_t in zip(input, target):
            mask_in, mask_t = self.get_mask(rect_in), self.get_mask(rect_t)
            intersection = (mask_in * mask_t).sum()
            union = (mask_in + mask_t - mask_in * mask_t).sum()
            losses.append(1 - intersection / union)
        return torch.stack(losses).mean()


torch.manual_seed(0)
regressor = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
optimizer = torch.optim.Adam(regressor.parameters(), lr=1e-2)
criterion = IoU_real()
features = torch.randn(8, 16)
centre = torch.tensor([16.0, 16.0, 16.0, 16.0])
target = centre + torch.tensor([-6.0, -5.0, 7.0, 6.0]) + torch.randn(8, 4)
for step in range(5):
    boxes = centre + torch.tensor([-8.0, -8.0, 8.0, 8.0]) + 4 * torch.tanh(regressor(features))
    loss = criterion(boxes, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: IoU loss {loss.item():.4f}")
