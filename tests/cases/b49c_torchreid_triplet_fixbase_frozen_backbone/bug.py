# deep-person-reid (torchreid) -- "I change the config loss to triplet loss, but it occurs a error"
# https://github.com/KaiyangZhou/deep-person-reid/issues/373
# The user switched an OSNet softmax config to loss.name='triplet'. The triplet
# defaults are weight_t=1, weight_x=0, but the config still had
# fixbase_epoch=10 with open_layers=['classifier']. During the fixbase epochs
# two_stepped_transfer_learning -> open_specified_layers freezes every layer
# except the classifier, and with weight_x=0 the classifier output is not in the
# loss, so the triplet loss is built only from frozen-backbone features and
# loss.backward() raises "element 0 of tensors does not require grad and does
# not have a grad_fn".
# Fix: with loss=triplet and weight_x=0, train.fixbase_epoch must be 0; the
# maintainer added check_cfg() to scripts/main.py asserting exactly that
# ('The output of classifier is not included in the computational graph').
from types import SimpleNamespace as NS

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


# ---- torchreid/utils/torchtools.py ----
def open_all_layers(model):
    model.train()
    for p in model.parameters():
        p.requires_grad = True


def open_specified_layers(model, open_layers):
    if isinstance(open_layers, str):
        open_layers = [open_layers]
    for layer in open_layers:
        assert hasattr(model, layer), '"{}" is not an attribute of the model'.format(layer)
    for name, module in model.named_children():
        if name in open_layers:
            module.train()
            for p in module.parameters():
                p.requires_grad = True
        else:
            module.eval()
            for p in module.parameters():
                p.requires_grad = False


# ---- torchreid/losses ----
class TripletLoss(nn.Module):
    def __init__(self, margin=0.3):
        super(TripletLoss, self).__init__()
        self.margin = margin
        self.ranking_loss = nn.MarginRankingLoss(margin=margin)

    def forward(self, inputs, targets):
        n = inputs.size(0)
        dist = torch.pow(inputs, 2).sum(dim=1, keepdim=True).expand(n, n)
        dist = dist + dist.t()
        dist = torch.addmm(dist, inputs, inputs.t(), beta=1, alpha=-2)
        dist = dist.clamp(min=1e-12).sqrt()
        mask = targets.expand(n, n).eq(targets.expand(n, n).t())
        dist_ap, dist_an = [], []
        for i in range(n):
            dist_ap.append(dist[i][mask[i]].max().unsqueeze(0))
            dist_an.append(dist[i][mask[i] == 0].min().unsqueeze(0))
        dist_ap = torch.cat(dist_ap)
        dist_an = torch.cat(dist_an)
        y = torch.ones_like(dist_an)
        return self.ranking_loss(dist_an, dist_ap, y)


class CrossEntropyLoss(nn.Module):
    def __init__(self, num_classes, eps=0.1, label_smooth=True):
        super(CrossEntropyLoss, self).__init__()
        self.num_classes = num_classes
        self.eps = eps if label_smooth else 0
        self.logsoftmax = nn.LogSoftmax(dim=1)

    def forward(self, inputs, targets):
        log_probs = self.logsoftmax(inputs)
        zeros = torch.zeros(log_probs.size())
        targets = zeros.scatter_(1, targets.unsqueeze(1).data, 1)
        targets = (1 - self.eps) * targets + self.eps / self.num_classes
        return (-targets * log_probs).mean(0).sum()


# ---- torchreid/models/osnet.py (tiny stand-in with the same attribute names) ----
class OSNet(nn.Module):
    def __init__(self, num_classes, loss='softmax', feature_dim=32):
        super(OSNet, self).__init__()
        self.loss = loss
        self.conv1 = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1),
                                   nn.BatchNorm2d(16), nn.ReLU())
        self.conv2 = nn.Sequential(nn.Conv2d(16, 32, 3, stride=2, padding=1),
                                   nn.BatchNorm2d(32), nn.ReLU())
        self.global_avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Sequential(nn.Linear(32, feature_dim), nn.BatchNorm1d(feature_dim), nn.ReLU())
        self.classifier = nn.Linear(feature_dim, num_classes)

    def forward(self, x):
        x = self.conv2(self.conv1(x))
        v = self.global_avgpool(x).view(x.size(0), -1)
        v = self.fc(v)
        if not self.training:
            return v
        y = self.classifier(v)
        if self.loss == 'softmax':
            return y
        elif self.loss == 'triplet':
            return y, v
        raise KeyError('Unsupported loss: {}'.format(self.loss))


# ---- torchreid/engine/engine.py ----
class Engine(object):
    def __init__(self, datamanager, model, optimizer, use_gpu=False):
        self.datamanager = datamanager
        self.train_loader = datamanager.train_loader
        self.model = model
        self.optimizer = optimizer
        self.use_gpu = use_gpu

    def run(self, max_epoch=0, fixbase_epoch=0, open_layers=None):
        print('=> Start training')
        for self.epoch in range(0, max_epoch):
            self.train(fixbase_epoch=fixbase_epoch, open_layers=open_layers)

    def train(self, fixbase_epoch=0, open_layers=None):
        self.model.train()
        self.two_stepped_transfer_learning(self.epoch, fixbase_epoch, open_layers)
        for self.batch_idx, data in enumerate(self.train_loader):
            loss_summary = self.forward_backward(data)
        print('epoch {}: {}'.format(self.epoch + 1, loss_summary))

    def compute_loss(self, criterion, outputs, targets):
        return criterion(outputs, targets)

    def parse_data_for_train(self, data):
        return data['img'], data['pid']

    def two_stepped_transfer_learning(self, epoch, fixbase_epoch, open_layers, model=None):
        model = self.model if model is None else model
        if (epoch + 1) <= fixbase_epoch and open_layers is not None:
            print('* Only train {} (epoch: {}/{})'.format(open_layers, epoch + 1, fixbase_epoch))
            open_specified_layers(model, open_layers)
        else:
            open_all_layers(model)


# ---- torchreid/engine/image/triplet.py ----
class ImageTripletEngine(Engine):
    def __init__(self, datamanager, model, optimizer, margin=0.3, weight_t=1,
                 weight_x=1, use_gpu=False, label_smooth=True):
        super(ImageTripletEngine, self).__init__(datamanager, model, optimizer, use_gpu)
        self.weight_t = weight_t
        self.weight_x = weight_x
        self.criterion_t = TripletLoss(margin=margin)
        self.criterion_x = CrossEntropyLoss(num_classes=datamanager.num_train_pids,
                                            label_smooth=label_smooth)

    def forward_backward(self, data):
        imgs, pids = self.parse_data_for_train(data)
        outputs, features = self.model(imgs)

        loss = 0
        loss_summary = {}
        if self.weight_t > 0:
            loss_t = self.compute_loss(self.criterion_t, features, pids)
            loss += self.weight_t * loss_t
            loss_summary['loss_t'] = loss_t.item()
        if self.weight_x > 0:
            loss_x = self.compute_loss(self.criterion_x, outputs, pids)
            loss += self.weight_x * loss_x
            loss_summary['loss_x'] = loss_x.item()
        assert loss_summary

        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss_summary


# ---- random stand-in for ImageDataManager with RandomIdentitySampler ----
def build_datamanager(num_pids=6, num_instances=2, n_batches=2):
    loader = []
    for _ in range(n_batches):
        pids = torch.randperm(num_pids)[:4].repeat_interleave(num_instances)
        loader.append({'img': torch.randn(pids.numel(), 3, 32, 16), 'pid': pids})
    return NS(train_loader=loader, num_train_pids=num_pids)


# ---- scripts/main.py ----
def main():
    cfg = NS(
        loss=NS(name='triplet', triplet=NS(margin=0.3, weight_t=1., weight_x=0.),
                softmax=NS(label_smooth=True)),
        train=NS(optim='amsgrad', lr=0.0015, max_epoch=2,
                 fixbase_epoch=10,  # <- autograd_error
                 open_layers=['classifier']),
    )
    datamanager = build_datamanager()
    model = OSNet(num_classes=datamanager.num_train_pids, loss=cfg.loss.name)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.train.lr, amsgrad=True)
    engine = ImageTripletEngine(datamanager, model, optimizer,
                                margin=cfg.loss.triplet.margin,
                                weight_t=cfg.loss.triplet.weight_t,
                                weight_x=cfg.loss.triplet.weight_x,
                                label_smooth=cfg.loss.softmax.label_smooth)
    w0 = model.conv1[0].weight.detach().clone()
    engine.run(max_epoch=cfg.train.max_epoch, fixbase_epoch=cfg.train.fixbase_epoch,
               open_layers=cfg.train.open_layers)
    print('conv1.grad is None:', model.conv1[0].weight.grad is None)
    print('backbone changed:', not torch.equal(w0, model.conv1[0].weight))


if __name__ == '__main__':
    main()
