# FairMOT -- "About trainable variables"
# https://github.com/ifzhang/FairMOT/issues/223
# MotLoss (src/lib/trains/mot.py) owns trainable parameters: the re-ID classifier
# nn.Linear(emb_dim, nID) and the uncertainty weights s_det / s_id (nn.Parameter).
# train.py builds the optimizer from model.parameters() only and BaseTrainer
# wraps the loss in ModleWithLoss without handing its parameters to the
# optimizer, so the classifier and s_det/s_id get gradients but are never updated.
# Fix (commit 2a353b16, base_trainer.py L30): BaseTrainer.__init__ adds
#   self.optimizer.add_param_group({'params': self.loss.parameters()})
import math
from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


# ---- models/utils.py ----
def _sigmoid(x):
    return torch.clamp(x.sigmoid_(), min=1e-4, max=1 - 1e-4)


def _gather_feat(feat, ind):
    dim = feat.size(2)
    ind = ind.unsqueeze(2).expand(ind.size(0), ind.size(1), dim)
    return feat.gather(1, ind)


def _tranpose_and_gather_feat(feat, ind):
    feat = feat.permute(0, 2, 3, 1).contiguous()
    feat = feat.view(feat.size(0), -1, feat.size(3))
    return _gather_feat(feat, ind)


# ---- models/losses.py ----
def _neg_loss(pred, gt):
    pos_inds = gt.eq(1).float()
    neg_inds = gt.lt(1).float()
    neg_weights = torch.pow(1 - gt, 4)
    pos_loss = torch.log(pred) * torch.pow(1 - pred, 2) * pos_inds
    neg_loss = torch.log(1 - pred) * torch.pow(pred, 2) * neg_weights * neg_inds
    num_pos = pos_inds.float().sum()
    pos_loss, neg_loss = pos_loss.sum(), neg_loss.sum()
    if num_pos == 0:
        return -neg_loss
    return -(pos_loss + neg_loss) / num_pos


class FocalLoss(nn.Module):
    def forward(self, out, target):
        return _neg_loss(out, target)


class RegL1Loss(nn.Module):
    def forward(self, output, mask, ind, target):
        pred = _tranpose_and_gather_feat(output, ind)
        mask = mask.unsqueeze(2).expand_as(pred).float()
        loss = F.l1_loss(pred * mask, target * mask, reduction='sum')
        return loss / (mask.sum() + 1e-4)


# ---- models/model.py: a tiny stand-in for DLASeg with the same heads ----
class TinySeg(nn.Module):
    def __init__(self, heads, head_conv):
        super(TinySeg, self).__init__()
        self.base = nn.Sequential(nn.Conv2d(3, 16, 3, stride=4, padding=1), nn.ReLU())
        self.heads = heads
        for head, classes in heads.items():
            self.__setattr__(head, nn.Sequential(
                nn.Conv2d(16, head_conv, 3, padding=1), nn.ReLU(),
                nn.Conv2d(head_conv, classes, 1)))

    def forward(self, x):
        y = self.base(x)
        return [{head: self.__getattr__(head)(y) for head in self.heads}]


def create_model(arch, heads, head_conv):
    return TinySeg(heads, head_conv)


# ---- trains/mot.py ----
class MotLoss(torch.nn.Module):
    def __init__(self, opt):
        super(MotLoss, self).__init__()
        self.crit = FocalLoss()
        self.crit_reg = RegL1Loss()
        self.crit_wh = self.crit_reg
        self.opt = opt
        self.emb_dim = opt.reid_dim
        self.nID = opt.nID
        self.classifier = nn.Linear(self.emb_dim, self.nID)
        self.IDLoss = nn.CrossEntropyLoss(ignore_index=-1)
        self.emb_scale = math.sqrt(2) * math.log(self.nID - 1)
        self.s_det = nn.Parameter(-1.85 * torch.ones(1))
        self.s_id = nn.Parameter(-1.05 * torch.ones(1))

    def forward(self, outputs, batch):
        opt = self.opt
        hm_loss, wh_loss, off_loss, id_loss = 0, 0, 0, 0
        for s in range(opt.num_stacks):
            output = outputs[s]
            output['hm'] = _sigmoid(output['hm'])
            hm_loss += self.crit(output['hm'], batch['hm']) / opt.num_stacks
            wh_loss += self.crit_reg(output['wh'], batch['reg_mask'],
                                     batch['ind'], batch['wh']) / opt.num_stacks
            off_loss += self.crit_reg(output['reg'], batch['reg_mask'],
                                      batch['ind'], batch['reg']) / opt.num_stacks
            id_head = _tranpose_and_gather_feat(output['id'], batch['ind'])
            id_head = id_head[batch['reg_mask'] > 0].contiguous()
            id_head = self.emb_scale * F.normalize(id_head)
            id_target = batch['ids'][batch['reg_mask'] > 0]
            id_output = self.classifier(id_head).contiguous()
            id_loss += self.IDLoss(id_output, id_target)

        det_loss = opt.hm_weight * hm_loss + opt.wh_weight * wh_loss + opt.off_weight * off_loss
        loss = torch.exp(-self.s_det) * det_loss + torch.exp(-self.s_id) * id_loss + (self.s_det + self.s_id)
        loss *= 0.5
        loss_stats = {'loss': loss, 'hm_loss': hm_loss,
                      'wh_loss': wh_loss, 'off_loss': off_loss, 'id_loss': id_loss}
        return loss, loss_stats


# ---- trains/base_trainer.py ----
class ModleWithLoss(torch.nn.Module):
    def __init__(self, model, loss):
        super(ModleWithLoss, self).__init__()
        self.model = model
        self.loss = loss

    def forward(self, batch):
        outputs = self.model(batch['input'])
        loss, loss_stats = self.loss(outputs, batch)
        return outputs[-1], loss, loss_stats


class BaseTrainer(object):
    def __init__(self, opt, model, optimizer=None):
        self.opt = opt
        self.optimizer = optimizer
        self.loss_stats, self.loss = self._get_losses(opt)
        self.model_with_loss = ModleWithLoss(model, self.loss)
        self.optimizer.add_param_group({'params': self.loss.parameters()})

    def run_epoch(self, phase, epoch, data_loader):
        model_with_loss = self.model_with_loss
        model_with_loss.train()
        for iter_id, batch in enumerate(data_loader):
            output, loss, loss_stats = model_with_loss(batch)
            loss = loss.mean()
            if phase == 'train':
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
        return {k: v.item() for k, v in loss_stats.items()}

    def train(self, epoch, data_loader):
        return self.run_epoch('train', epoch, data_loader)


class MotTrainer(BaseTrainer):
    def _get_losses(self, opt):
        loss_states = ['loss', 'hm_loss', 'wh_loss', 'off_loss', 'id_loss']
        loss = MotLoss(opt)
        return loss_states, loss


# ---- random stand-in for the JDE dataset ----
def make_batch(opt, B=2, H=32, W=32, K=4):
    h, w = H // 4, W // 4
    hm = torch.rand(B, 1, h, w) * 0.5
    ind = torch.stack([torch.randperm(h * w)[:K] for _ in range(B)])
    for b in range(B):
        hm[b, 0].view(-1)[ind[b]] = 1.0
    return {'input': torch.randn(B, 3, H, W), 'hm': hm, 'ind': ind,
            'reg_mask': torch.ones(B, K, dtype=torch.uint8),
            'wh': torch.rand(B, K, 4) * 5, 'reg': torch.rand(B, K, 2),
            'ids': torch.randint(0, opt.nID, (B, K))}


# ---- train.py ----
def main(opt):
    model = create_model(opt.arch, opt.heads, opt.head_conv)
    optimizer = torch.optim.Adam(model.parameters(), opt.lr)  # <- optimizer
    trainer = MotTrainer(opt, model, optimizer)
    data_loader = [make_batch(opt) for _ in range(3)]

    s_det0 = trainer.loss.s_det.detach().clone()
    cls0 = trainer.loss.classifier.weight.detach().clone()
    for epoch in range(1, opt.num_epochs + 1):
        log = trainer.train(epoch, data_loader)
        print('epoch', epoch, {k: round(v, 4) for k, v in log.items()})

    print('s_det.grad:', trainer.loss.s_det.grad)
    print('s_det before/after: %.4f / %.4f' % (s_det0.item(), trainer.loss.s_det.item()))
    print('classifier changed:', not torch.equal(cls0, trainer.loss.classifier.weight))


if __name__ == '__main__':
    opt = SimpleNamespace(arch='dla_34', heads={'hm': 1, 'wh': 4, 'id': 16, 'reg': 2},
                          head_conv=16, reid_dim=16, nID=10, num_stacks=1, lr=1e-2,
                          hm_weight=1, wh_weight=0.1, off_weight=1, id_weight=1,
                          num_epochs=2)
    main(opt)
