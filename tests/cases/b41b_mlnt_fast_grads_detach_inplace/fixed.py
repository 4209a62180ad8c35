# Meta-learning on noisy labels (MLNT-style): for each synthetic label perturbation,
# take one fast SGD step with torch.autograd.grad, run the net with the fast weights
# and pull it towards a mean teacher. The gradients are turned into constants with
# the PyTorch 0.3-era idiom `grad.detach_(); grad.requires_grad = False`.
from collections import OrderedDict
import random
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable

torch.manual_seed(0)
random.seed(0)
NUM_CLASSES, NUM_FAST, META_LR, EPS = 5, 2, 0.02, 0.99


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8, NUM_CLASSES)

    def forward(self, x, weights=None, get_feat=False):
        if weights is None:
            weights = OrderedDict(self.named_parameters())
        h = F.relu(F.conv2d(x, weights['conv1.weight'], weights['conv1.bias'], padding=1))
        feat = F.adaptive_avg_pool2d(h, 1).flatten(1)
        out = F.linear(feat, weights['fc.weight'], weights['fc.bias'])
        return (out, feat) if get_feat else out


net, tch_net, pretrain_net = Net(), Net(), Net()
for param in tch_net.parameters():
    param.requires_grad = False
for param in pretrain_net.parameters():
    param.requires_grad = False
criterion = nn.CrossEntropyLoss()
consistent_criterion = nn.KLDivLoss(reduction='batchmean')
optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)

init = True
for batch_idx in range(2):
    inputs, targets = torch.randn(8, 3, 8, 8), torch.randint(0, NUM_CLASSES, (8,))
    optimizer.zero_grad()
    inputs, targets = Variable(inputs), Variable(targets)
    outputs = net(inputs)
    class_loss = criterion(outputs, targets)
    class_loss.backward(retain_graph=True)

    for param, param_tch in zip(net.parameters(), tch_net.parameters()):
        if init:
            param_tch.data.copy_(param.data)
        else:
            param_tch.data.mul_(EPS).add_(param.data, alpha=1 - EPS)
    init = False

    _, feats = pretrain_net(inputs, get_feat=True)
    p_tch = F.softmax(tch_net(inputs), dim=1).detach()

    for i in range(NUM_FAST):
        targets_fast = targets.clone()
        randidx = torch.randperm(targets.size(0))
        for n in range(targets.size(0) // 2):
            idx = randidx[n]
            dist = torch.sum((feats[idx:idx + 1] - feats) ** 2, dim=1)
            _, neighbor = torch.topk(dist, 4, largest=False)
            targets_fast[idx] = targets[neighbor[random.randint(1, 3)]]
        fast_loss = criterion(outputs, targets_fast)

        grads = torch.autograd.grad(fast_loss, net.parameters(), create_graph=True,
                                    retain_graph=True, only_inputs=True)
        for grad in grads:
            grad = grad.detach()
            grad.requires_grad = False

        fast_weights = OrderedDict((name, param - META_LR * grad)
                                   for ((name, param), grad) in zip(net.named_parameters(), grads))
        fast_out = net(inputs, fast_weights)
        logp_fast = F.log_softmax(fast_out, dim=1)
        if i == 0:
            consistent_loss = consistent_criterion(logp_fast, p_tch)
        else:
            consistent_loss = consistent_loss + consistent_criterion(logp_fast, p_tch)

    meta_loss = consistent_loss / NUM_FAST
    meta_loss.backward()
    optimizer.step()
    print(batch_idx, class_loss.item(), meta_loss.item(), net.fc.weight.grad.abs().sum().item())
