"""ngailapdi/LWF (Learning without Forgetting, PyTorch), issue #8,
https://github.com/ngailapdi/LWF/issues/8: "In the 'return Variable(outputs.data, requires_grad=True).cuda()'
line, this new Variable loses the computation for computing output and optimizing this output will not update
the model. As a result, the dist_loss ... does not affect the results" (same accuracy with the term removed).
Why: MultiClassCrossEntropy returns its value re-wrapped from outputs.data as a fresh leaf, so loss =
dist_loss + cls_loss reaches the model only through cls_loss; the distillation term trains nothing.
Fix: return outputs itself. (.cuda() calls dropped so the script runs on CPU; torchvision's resnet34 is a
small Linear feature extractor here.)"""
import copy

import torch
import torch.nn as nn
from torch.autograd import Variable


def MultiClassCrossEntropy(logits, labels, T):
    # Ld = -1/N * sum(N) sum(C) softmax(label) * log(softmax(logit))
    labels = Variable(labels.data, requires_grad=False)
    outputs = torch.log_softmax(logits/T, dim=1)   # compute the log of softmax values
    labels = torch.softmax(labels/T, dim=1)
    outputs = torch.sum(outputs * labels, dim=1, keepdim=False)
    outputs = -torch.mean(outputs, dim=0, keepdim=False)
    return Variable(outputs.data, requires_grad=True)  # <- cut_term


class Model(nn.Module):
    def __init__(self, classes):
        super(Model, self).__init__()
        self.init_lr = 0.1
        self.momentum = 0.9
        self.weight_decay = 0.0001
        self.feature_extractor = nn.Sequential(nn.Linear(10, 16), nn.ReLU())
        self.fc = nn.Linear(16, classes, bias=False)
        self.n_classes = classes

    def forward(self, x):
        x = self.feature_extractor(x)
        x = x.view(x.size(0), -1)
        x = self.fc(x)
        return x

    def increment_classes(self, n):
        """Add n classes in the final fc layer"""
        in_features = self.fc.in_features
        out_features = self.fc.out_features
        weight = self.fc.weight.data
        self.fc = nn.Linear(in_features, out_features + n, bias=False)
        self.fc.weight.data[:out_features] = weight
        self.n_classes += n

    def update(self, batches):
        # Save a copy to compute distillation outputs
        prev_model = copy.deepcopy(self)
        self.increment_classes(1)
        optimizer = torch.optim.SGD(self.parameters(), lr=self.init_lr, momentum=self.momentum,
                                    weight_decay=self.weight_decay)
        for i, (images, labels) in enumerate(batches):
            optimizer.zero_grad()
            logits = self.forward(images)
            cls_loss = nn.CrossEntropyLoss()(logits, labels)
            dist_target = prev_model.forward(images)
            logits_dist = logits[:, :-1]
            dist_loss = MultiClassCrossEntropy(logits_dist, dist_target, 2)
            loss = dist_loss + cls_loss
            loss.backward()
            optimizer.step()
            print('Iter [%d] Loss: %.4f  dist_loss reaches the model: %s'
                  % (i + 1, loss.item(), dist_loss.grad_fn is not None))


torch.manual_seed(0)
model = Model(3)
batches = [(torch.randn(8, 10), torch.randint(0, 4, (8,))) for _ in range(4)]
model.update(batches)
