"""Dynamic Model Pruning with Feedback (DPF), INCHEON-CHO/Dynamic_Model_Pruning_with_Feedback issue #1,
https://github.com/INCHEON-CHO/Dynamic_Model_Pruning_with_Feedback/issues/1: the ResNet's forward masks the dense
conv weight with `self.conv1.weight.data = torch.mul(self.conv1.weight, self.mask1.weight)`. DPF is meant to
compute the gradient at the masked (sparse) weight and apply it to the dense weight, so that pruned weights keep
learning and can come back at the next re-prune. Writing the product into `.data` instead overwrites the dense
weight with zeros at every forward: the pruned entries get a gradient and an SGD step, but the next forward wipes
them again, so they never learn and never revive (the masks, nn.Conv2d weights in the optimizer, get no gradient).
The author confirmed the line and replaced it with an autograd Function (Masker: forward w*mask, backward passes
the gradient straight to w). Shrunk: one masked stem conv, one plain conv, CIFAR to random batches."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)


class Masker(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, mask):
        return x * mask

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class ResNet(nn.Module):
    def __init__(self, num_classes=10):
        super(ResNet, self).__init__()
        self.conv1 = nn.Conv2d(3, 16, kernel_size=3, stride=1, padding=1, bias=False)
        self.mask1 = nn.Conv2d(3, 16, kernel_size=3, stride=1, padding=1, bias=False)
        self.mask1.weight.data = torch.ones(self.mask1.weight.size())
        self.mask1.weight.requires_grad = False
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 16, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.linear = nn.Linear(16, num_classes)

    def forward(self, x):
        masked_weight = Masker.apply(self.conv1.weight, self.mask1.weight)

        out = F.relu(self.bn1(self.conv1._conv_forward(x, masked_weight, None)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = F.avg_pool2d(out, out.size(3))
        out = out.view(out.size(0), -1)
        return self.linear(out)

    def __prune__(self, threshold):
        self.mask1.weight.data = torch.gt(torch.abs(self.conv1.weight), threshold).float()


def weight_prune(model, target_sparsity):
    w = model.conv1.weight.detach().abs().flatten()
    threshold = w.kthvalue(max(1, int(target_sparsity * w.numel()))).values
    model.__prune__(threshold)


model = ResNet()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
batches = [(torch.randn(16, 3, 8, 8), torch.randint(0, 10, (16,))) for _ in range(4)]

pruned_first = None
for iteration in range(24):
    input, target = batches[iteration % len(batches)]
    if iteration == 4:
        weight_prune(model, 0.5)
        pruned_first = model.mask1.weight.detach() == 0
    output = model(input)
    loss = criterion(output, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

model.eval()
with torch.no_grad():
    model(batches[0][0])  # validation forward
dense = model.conv1.weight.detach()
print("grad at pruned conv1 entries (last step):", float(model.conv1.weight.grad[pruned_first].abs().sum()))
print("pruned conv1 entries still exactly zero:", bool((dense[pruned_first] == 0).all()))
print("mask1.weight.grad is None:", model.mask1.weight.grad is None)
