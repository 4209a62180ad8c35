# Deep Mutual Learning trainer: every peer is run once per batch, then each peer
# in turn gets CE + KL(peer_i || peer_j) and its own optimizer step.
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.autograd import Variable

torch.manual_seed(0)


class SmallNet(nn.Module):
    def __init__(self, num_classes=10):
        super(SmallNet, self).__init__()
        self.conv1 = nn.Conv2d(3, 8, kernel_size=3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.linear = nn.Linear(8, num_classes)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.avg_pool2d(out, out.size()[3])
        out = out.view(out.size(0), -1)
        return self.linear(out)


class Trainer(object):
    def __init__(self, model_num=2):
        self.model_num = model_num
        self.models = []
        self.optimizers = []
        self.loss_kl = nn.KLDivLoss(reduction='batchmean')
        self.loss_ce = nn.CrossEntropyLoss()
        for i in range(self.model_num):
            model = SmallNet()
            self.models.append(model)
            self.optimizers.append(optim.SGD(model.parameters(), lr=0.1, momentum=0.9))

    def train_one_epoch(self, loader):
        for i in range(self.model_num):
            self.models[i].train()
        for images, labels in loader:
            images, labels = Variable(images), Variable(labels)
            # forward pass
            outputs = []
            for model in self.models:
                outputs.append(model(images))
            for i in range(self.model_num):
                ce_loss = self.loss_ce(outputs[i], labels)
                kl_loss = 0
                for j in range(self.model_num):
                    if i != j:
                        kl_loss += self.loss_kl(F.log_softmax(outputs[i], dim=1),
                                                F.softmax(outputs[j].detach(), dim=1))
                loss = ce_loss + kl_loss / (self.model_num - 1)

                # compute gradients and update SGD
                self.optimizers[i].zero_grad()
                loss.backward()
                self.optimizers[i].step()
                print("model_%d loss %.4f" % (i + 1, loss.item()))


loader = [(torch.randn(16, 3, 8, 8), torch.randint(0, 10, (16,))) for _ in range(3)]
trainer = Trainer(model_num=2)
trainer.train_one_epoch(loader)
