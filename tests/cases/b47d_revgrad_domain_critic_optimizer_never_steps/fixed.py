# RevGrad (DANN) from easezyc/deep-transfer-learning (UDA/pytorch1.0): the domain classifier
# sits behind a gradient reversal layer, and the training loop builds a separate
# optimizer_critic for it, but only optimizer_fea ever steps. The domain classifier gets
# gradients from every backward and never changes, so it never becomes an adversary.
# Fixed as in the issue: the domain classifier's group goes into optimizer_fea.
import math
import torch
import torch.nn as nn

torch.manual_seed(0)
batch_size, iteration, lr, momentum, l2_decay = 8, 20, 0.01, 0.9, 5e-4


class AdversarialLayer(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        return input * 1.0

    @staticmethod
    def backward(ctx, gradOutput):
        return -1.0 * gradOutput


class AdversarialNetwork(nn.Module):
    def __init__(self, in_feature):
        super().__init__()
        self.ad_layer1 = nn.Linear(in_feature, 32)
        self.ad_layer2 = nn.Linear(32, 1)
        self.relu1, self.sigmoid = nn.LeakyReLU(), nn.Sigmoid()

    def forward(self, x):
        return self.sigmoid(self.ad_layer2(self.relu1(self.ad_layer1(x))))


class RevGrad(nn.Module):
    def __init__(self, num_classes=31):
        super().__init__()
        self.sharedNet = nn.Sequential(nn.Linear(20, 64), nn.ReLU())
        self.cls_fn = nn.Linear(64, num_classes)
        self.domain_fn = AdversarialNetwork(in_feature=64)

    def forward(self, data):
        data = self.sharedNet(data)
        clabel_pred = self.cls_fn(data)
        dlabel_pred = self.domain_fn(AdversarialLayer.apply(data))
        return clabel_pred, dlabel_pred


def train(model):
    src_dlabel = torch.ones(batch_size).long()
    tgt_dlabel = torch.zeros(batch_size).long()
    for i in range(1, iteration + 1):
        model.train()
        LEARNING_RATE = lr / math.pow((1 + 10 * (i - 1) / (iteration)), 0.75)
        optimizer_fea = torch.optim.SGD([
            {'params': model.sharedNet.parameters()},
            {'params': model.cls_fn.parameters(), 'lr': LEARNING_RATE},
            {'params': model.domain_fn.parameters(), 'lr': LEARNING_RATE},
        ], lr=LEARNING_RATE / 10, momentum=momentum, weight_decay=l2_decay)

        src_data, src_clabel = torch.randn(batch_size, 20), torch.randint(0, 31, (batch_size,))
        tgt_data = torch.randn(batch_size, 20) + 1.0
        src_clabel_pred, src_dlabel_pred = model(src_data)
        label_loss = nn.CrossEntropyLoss()(src_clabel_pred, src_clabel)

        tgt_clabel_pred, tgt_dlabel_pred = model(tgt_data)
        new_label_pred = torch.cat((src_dlabel_pred, tgt_dlabel_pred), 0)
        confusion_loss_total = nn.BCELoss()(
            new_label_pred, torch.cat((src_dlabel, tgt_dlabel), 0).float().reshape(2 * batch_size, 1))

        fea_loss_total = confusion_loss_total + label_loss
        optimizer_fea.zero_grad()
        fea_loss_total.backward()
        optimizer_fea.step()
        if i % 5 == 0:
            print('iter {} confusion_Loss: {:.6f} label_Loss: {:.6f}'.format(
                i, confusion_loss_total.item(), label_loss.item()))


model = RevGrad(num_classes=31)
w0 = model.domain_fn.ad_layer1.weight.detach().clone()
train(model)
print("domain classifier moved by",
      (model.domain_fn.ad_layer1.weight - w0).abs().max().item())
