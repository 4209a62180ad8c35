"""HHL re-ID training (zhunzhong07/HHL#8, https://github.com/zhunzhong07/HHL/issues/8): HHL.py builds two
SGD parameter groups (pretrained base at lr_mult 0.1, new layers at 1.0), and a user found that the
parameters of model.module.triplet, feat and feat_bn are in neither group, so they never update.
Why: base_param_ids, the set meant to hold only the base's ids, also unions in triplet, feat and feat_bn; the
'new_params' group is then built as "everything not in base_param_ids", which leaves only the classifier. The
three embedding layers are used in forward and get gradients, but no optimizer ever steps them.
Fix: give them a group of their own, as the report did (param_groups lists triplet, feat and feat_bn)."""
import torch
from torch import nn
from torch.nn import functional as F


class ResNet(nn.Module):
    """reid/models/resnet.py in short: a pretrained base, then feat/feat_bn embedding, classifier, triplet."""

    def __init__(self, num_features=16, num_classes=5, triplet_features=8):
        super(ResNet, self).__init__()
        self.base = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())
        self.feat = nn.Linear(8, num_features)
        self.feat_bn = nn.BatchNorm1d(num_features)
        self.classifier = nn.Linear(num_features, num_classes)
        self.triplet = nn.Linear(num_features, triplet_features)

    def forward(self, x):
        x = self.base(x)
        x = F.avg_pool2d(x, x.size()[2:])
        x = x.view(x.size(0), -1)
        x = self.feat(x)
        x = self.feat_bn(x)
        x = F.relu(x)
        x_triplet = self.triplet(x)
        x_class = self.classifier(x)
        return x_class, x_triplet


torch.manual_seed(0)
model = nn.DataParallel(ResNet())

# Optimizer
if hasattr(model.module, 'base'):
    base_param_ids = set(map(id, model.module.base.parameters())) \
                     | set(map(id, model.module.triplet.parameters())) \
                     | set(map(id, model.module.feat.parameters())) \
                     | set(map(id, model.module.feat_bn.parameters()))

    new_params = [p for p in model.parameters() if
                  id(p) not in base_param_ids]
    param_groups = [  # <- optimizer
        {'params': model.module.base.parameters(), 'lr_mult': 0.1},
        {'params': new_params, 'lr_mult': 1.0}]
else:
    param_groups = model.parameters()
optimizer = torch.optim.SGD(param_groups, lr=0.1, momentum=0.9, weight_decay=5e-4, nesterov=True)
for g in optimizer.param_groups:
    g['lr'] = 0.1 * g.get('lr_mult', 1)

criterion_c = nn.CrossEntropyLoss()
before = model.module.triplet.weight.detach().clone()
for step in range(3):
    inputs, targets = torch.randn(8, 3, 8, 8), torch.randint(0, 5, (8,))
    outputs, triplet_outputs = model(inputs)
    a, p = triplet_outputs[:4], triplet_outputs[4:]
    loss = criterion_c(outputs, targets) + 0.5 * F.relu((a - p).pow(2).sum(1) - 0.3).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

print("triplet grad is None:", model.module.triplet.weight.grad is None)
print("triplet weights changed:", not torch.equal(before, model.module.triplet.weight))
