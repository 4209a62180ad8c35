"""OpenPCDet adam_onecycle (open-mmlab/OpenPCDet#960, https://github.com/open-mmlab/OpenPCDet/issues/960):
an nn.Parameter added to a non-leaf module (a head that also has child layers) is never optimized.
Why: build_optimizer's 'adam_onecycle' branch gives OptimWrapper only the parameters of the leaf modules
(flatten_model keeps modules without children), so a Parameter registered directly on a module that has
children gets its gradient but is in no param group.
Fix (the reporter's): wrap the nn.Parameter in a small nn.Module subclass that returns it in forward."""
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

children = lambda m: list(m.children())
num_children = lambda m: len(children(m))
flatten_model = lambda m: sum(map(flatten_model, m.children()), []) if num_children(m) else [m]
get_layer_groups = lambda m: [nn.Sequential(*flatten_model(m))]


class PointHeadTemplate(nn.Module):
    def __init__(self, num_class=3):
        super().__init__()
        self.cls_layers = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, num_class))
        self.cls_temperature = nn.Parameter(torch.ones(1))  # <- optimizer

    def forward(self, point_features):
        return self.cls_layers(point_features) / self.cls_temperature


class PointRCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone_3d = nn.Sequential(nn.Linear(4, 16), nn.ReLU())
        self.point_head = PointHeadTemplate()

    def forward(self, points):
        return self.point_head(self.backbone_3d(points))


def build_optimizer(model, lr=3e-3, wd=0.01):
    optimizer_func = partial(torch.optim.Adam, betas=(0.9, 0.99))
    layer_groups = get_layer_groups(model)
    return optimizer_func([{"params": list(g.parameters()), "lr": lr, "weight_decay": wd} for g in layer_groups])


torch.manual_seed(0)
model = PointRCNN()
optimizer = build_optimizer(model)
points, labels = torch.randn(64, 4), torch.randint(0, 3, (64,))
temperature_before = model.point_head.cls_temperature.detach().clone()
for it in range(5):
    loss = F.cross_entropy(model(points), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("cls_temperature grad:", model.point_head.cls_temperature.grad)
print("cls_temperature changed:", not torch.equal(temperature_before, model.point_head.cls_temperature.detach()))
