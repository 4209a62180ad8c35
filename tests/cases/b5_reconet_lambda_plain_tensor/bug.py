"""RecoNet's tensor generation module (CWanli/RecoNet#10): the rank weights are
`torch.ones(self.rank, requires_grad=True)`, a plain tensor attribute, so they get a gradient but are in
no model.parameters() and the optimizer never changes them."""
import torch
import torch.nn.functional as F
from torch import nn


class TGMandTRM(nn.Module):
    def __init__(self, channels, h, rank=4):
        super(TGMandTRM, self).__init__()
        self.rank = rank
        self.conv1_1 = nn.ModuleList([nn.Sequential(nn.Conv2d(channels, channels, 1, bias=False), nn.Sigmoid())
                                      for _ in range(rank)])
        self.conv1_2 = nn.ModuleList([nn.Sequential(nn.Conv2d(h, h, 1, bias=False), nn.Sigmoid())
                                      for _ in range(rank)])
        self.conv1_3 = nn.ModuleList([nn.Sequential(nn.Conv2d(h, h, 1, bias=False), nn.Sigmoid())
                                      for _ in range(rank)])
        self.lam = torch.ones(self.rank, requires_grad=True)  # <- non_parameter_tensor
        self.pool = nn.AdaptiveAvgPool2d(1)

    def forward(self, x):
        b, c, height, width = x.size()
        C = self.pool(x)
        H = self.pool(x.permute(0, 3, 1, 2).contiguous())
        W = self.pool(x.permute(0, 2, 3, 1).contiguous())
        lam = torch.chunk(F.softmax(self.lam, -1), dim=0, chunks=self.rank)
        tensors = []
        for i in range(0, self.rank):
            chw = (self.conv1_1[i](C).view(b, c, 1, 1) * self.conv1_2[i](H).view(b, 1, height, 1)
                   * self.conv1_3[i](W).view(b, 1, 1, width))
            tensors.append(lam[i] * chw)
        tensor1 = sum(tensors)
        return torch.cat((x, F.relu(x * tensor1)), 1)


class RecoNetHead(nn.Module):
    def __init__(self, in_channels, nclass, h):
        super().__init__()
        self.feat = nn.Sequential(nn.Conv2d(in_channels, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU())
        self.decomp = TGMandTRM(8, h)
        self.conv6 = nn.Conv2d(16, nclass, 1)

    def forward(self, x):
        return self.conv6(self.decomp(self.feat(x)))


torch.manual_seed(0)
model = RecoNetHead(3, 4, h=6)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
image, target = torch.randn(2, 3, 6, 6), torch.randint(0, 4, (2, 6, 6))
for step in range(3):
    loss = F.cross_entropy(model(image), target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f} lam {model.decomp.lam.tolist()} lam.grad {model.decomp.lam.grad.norm():.2e}")
