"""4uiiurz1/pytorch-adacos, https://github.com/4uiiurz1/pytorch-adacos/issues/10
Seen: the margin head's class centres (metric_fc.W) stay at their random init for the whole run; only the
backbone learns. Why: mnist_train.py builds the SGD optimizer over model.parameters() only; metric_fc (ArcFace)
is a separate nn.Module whose W gets a gradient every step but is in no optimizer.
Fix: give the optimizer both parameter sets: list(model.parameters()) + list(metric_fc.parameters()).
"""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.nn import Parameter

torch.manual_seed(0)


class ArcFace(nn.Module):
    def __init__(self, num_features, num_classes, s=30.0, m=0.50):
        super().__init__()
        self.s, self.m = s, m
        self.W = Parameter(torch.FloatTensor(num_classes, num_features))
        nn.init.xavier_uniform_(self.W)

    def forward(self, input, label):
        x = F.normalize(input)
        W = F.normalize(self.W)
        logits = F.linear(x, W)
        theta = torch.acos(torch.clamp(logits, -1.0 + 1e-7, 1.0 - 1e-7))
        target_logits = torch.cos(theta + self.m)
        one_hot = torch.zeros_like(logits)
        one_hot.scatter_(1, label.view(-1, 1).long(), 1)
        output = logits * (1 - one_hot) + target_logits * one_hot
        return output * self.s


model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))  # MNISTNet stand-in
metric_fc = ArcFace(num_features=8, num_classes=4)
criterion = nn.CrossEntropyLoss()
optimizer = optim.SGD([{"params": model.parameters()}, {"params": metric_fc.parameters()}], lr=1e-2, momentum=0.5)

W0 = metric_fc.W.detach().clone()
for i in range(5):
    input, target = torch.randn(32, 16), torch.randint(0, 4, (32,))
    feature = model(input)
    output = metric_fc(feature, target)
    loss = criterion(output, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("metric_fc.W grad norm:", metric_fc.W.grad.norm().item())
print("metric_fc.W changed:", not torch.equal(W0, metric_fc.W.detach()))
