"""Malleable 2.5D convolution for RGB-D segmentation (charlesCXK/RGBD_Semantic_Segmentation_PyTorch#9): the block
adds the pooled depth branch with out += pool onto a ReLU output that ReluBackward saved, so backward raises "modified
by an inplace operation"; the maintainer's advice is a = a + b."""
import torch
import torch.nn.functional as F
from torch import nn


class Malleable25dBlock(nn.Module):
    def __init__(self, channels=4):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.bn = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU(inplace=False)
        self.pool = nn.AvgPool2d(3, stride=1, padding=1)

    def forward(self, x, depth):
        out = self.relu(self.bn(self.conv(x)))
        pool = self.pool(x * depth)
        out += pool  # <- inplace_saved
        return out


torch.manual_seed(0)
block, head = Malleable25dBlock(), nn.Conv2d(4, 3, 1)
optimizer = torch.optim.SGD([*block.parameters(), *head.parameters()], lr=0.01)
rgb, depth, label = torch.randn(2, 4, 8, 8), torch.rand(2, 1, 8, 8), torch.randint(0, 3, (2, 8, 8))
for step in range(3):
    loss = F.cross_entropy(head(block(rgb, depth)), label)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
