# SSD300 with an L2Norm layer on the conv4_3 features (SSD-variants models/SSD.py).
# Fix (from the thread): L2Norm divides out of place, torch.div(x, norm).
import itertools
from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class L2Norm(nn.Module):
    def __init__(self, n_channels, scale=20):
        super(L2Norm, self).__init__()
        self.weight = nn.Parameter(torch.Tensor(n_channels))
        nn.init.constant_(self.weight, scale)

    def forward(self, x):
        x = torch.div(x, x.pow(2).sum(dim=1, keepdim=True).sqrt() + 1e-10)
        out = self.weight.unsqueeze(0).unsqueeze(2).unsqueeze(3).expand_as(x) * x
        return out


class VGG16(nn.Module):  # tiny stand-in for the VGG16 backbone
    def __init__(self):
        super(VGG16, self).__init__()
        self._modules.update(OrderedDict([
            ('conv1_1', nn.Conv2d(3, 8, 3, padding=1)),
            ('pool1', nn.MaxPool2d(2, 2)),
            ('conv4_3', nn.Conv2d(8, 16, 3, padding=1)),
            ('pool4', nn.MaxPool2d(2, 2)),
            ('conv7', nn.Conv2d(16, 32, 1)),
        ]))


class SSD300(nn.Module):
    def __init__(self, n_classes):
        super(SSD300, self).__init__()
        self.n_classes = n_classes
        self.Base = VGG16()
        self.Extra = nn.Sequential(OrderedDict([
            ('extra1_1', nn.Conv2d(32, 16, 1)),
            ('extra1_2', nn.Conv2d(16, 16, 3, padding=1, stride=2)),
        ]))
        self.pred_layers = ['conv4_3', 'conv7', 'extra1_2']
        n_channels = [16, 32, 16]

        self.L2Norm = nn.ModuleList([L2Norm(16, 20)])
        self.norm_layers = ['conv4_3']  # decrease prediction layers' influence on backbone

        self.Loc = nn.ModuleList([])
        self.Conf = nn.ModuleList([])
        for i in range(len(self.pred_layers)):
            n = 4
            self.Loc.append(nn.Conv2d(n_channels[i], n * 4, 3, padding=1))
            self.Conf.append(nn.Conv2d(n_channels[i], n * (self.n_classes + 1), 3, padding=1))

    def forward(self, x):
        xs = []
        for name, m in itertools.chain(self.Base._modules.items(),
                                       self.Extra._modules.items()):
            if isinstance(m, nn.Conv2d):
                x = F.relu(m(x), inplace=True)
            else:
                x = m(x)

            if name in self.pred_layers:
                if name in self.norm_layers:
                    i = self.norm_layers.index(name)
                    xs.append(self.L2Norm[i](x))
                else:
                    xs.append(x)
        return self._prediction(xs)

    def _prediction(self, xs):
        locs = []
        confs = []
        for i, x in enumerate(xs):
            loc = self.Loc[i](x)
            loc = loc.permute(0, 2, 3, 1).contiguous().view(loc.size(0), -1, 4)
            locs.append(loc)
            conf = self.Conf[i](x)
            conf = conf.permute(0, 2, 3, 1).contiguous().view(conf.size(0), -1, self.n_classes + 1)
            confs.append(conf)
        return torch.cat(locs, dim=1), torch.cat(confs, dim=1)


model = SSD300(n_classes=3)
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)

images = torch.randn(2, 3, 16, 16)
locs, confs = model(images)
loc_targets = torch.randn_like(locs)
conf_targets = torch.randint(0, 4, confs.shape[:2])
loss = F.smooth_l1_loss(locs, loc_targets) + F.cross_entropy(confs.view(-1, 4), conf_targets.view(-1))
optimizer.zero_grad()
loss.backward()
optimizer.step()
print("loss", loss.item())
print("L2Norm weight grad is None:", model.L2Norm[0].weight.grad is None)
