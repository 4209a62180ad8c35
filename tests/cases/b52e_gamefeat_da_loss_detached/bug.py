# Detach synthetic data for both D and B/H updating
# https://github.com/jason718/game-feature-learning/issues/3
# Synthetic->real domain adaptation (Ren & Lee, "Cross-Domain Self-supervised Multi-task Feature Learning using
# Synthetic Imagery"). In Model.backward_BH the adversarial term loss_DA feeds netD with the DETACHED synthetic
# feature, and netD itself is frozen (set_requires_grad(netD, False)) during this update. So loss_DA carries no
# gradient at all: the base network netB never gets the domain-adversarial signal and cannot learn
# domain-invariant features (it only learns from the depth/normal/edge task losses).
# Fix (maintainer: "yes, you are absolutely correct. this is a bug and I fixed it"): drop the .detach() in
# backward_BH, keep it only in backward_D.
import torch
import torch.nn as nn

torch.manual_seed(0)


class netB_alexnet(nn.Module):
    def __init__(self):
        super(netB_alexnet, self).__init__()
        self.conv1 = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU(inplace=True))
        self.conv5 = nn.Sequential(nn.Conv2d(8, 8, 3, 1, 1), nn.ReLU(inplace=True))

    def forward(self, x):
        out = {}
        out['conv1'] = self.conv1(x)
        out['conv5'] = self.conv5(out['conv1'])
        out['out'] = out['conv5']
        return out


class netH_alexnet(nn.Module):
    def __init__(self):
        super(netH_alexnet, self).__init__()
        self.depth = nn.Conv2d(8, 1, 3, 1, 1)
        self.norm = nn.Conv2d(8, 3, 3, 1, 1)
        self.edge = nn.Conv2d(8, 1, 3, 1, 1)

    def forward(self, x):
        return {'depth': self.depth(x), 'norm': self.norm(x), 'edge': self.edge(x)}


class netD_alexnet(nn.Module):
    def __init__(self, layer):
        super(netD_alexnet, self).__init__()
        self.layer = layer
        self.model = nn.Sequential(nn.Conv2d(8, 8, 3, 2, 1), nn.LeakyReLU(0.2, True), nn.Conv2d(8, 1, 3, 1, 1))

    def forward(self, x):
        return self.model(x)


class GANLoss(nn.Module):
    def __init__(self, target_real_label=1.0, target_fake_label=0.0):
        super(GANLoss, self).__init__()
        self.register_buffer('real_label', torch.tensor(target_real_label))
        self.register_buffer('fake_label', torch.tensor(target_fake_label))
        self.loss = nn.MSELoss()

    def __call__(self, input, target_is_real):
        target_tensor = self.real_label if target_is_real else self.fake_label
        return self.loss(input, target_tensor.expand_as(input))


class ImagePool():
    def __init__(self, pool_size):
        self.pool_size = pool_size

    def query(self, images):
        return images


class Model():
    def initialize(self, cfg):
        self.cfg = cfg
        self.device = torch.device('cpu')
        self.netB = netB_alexnet()
        self.netH = netH_alexnet()
        self.netD = netD_alexnet(cfg['DA_LAYER'])
        self.criterionGAN = GANLoss()
        self.criterionDepth1 = torch.nn.MSELoss()
        self.criterionNorm = torch.nn.CosineEmbeddingLoss()
        self.optimizer_B = torch.optim.Adam(self.netB.parameters(), lr=cfg['LR'], betas=(0.5, 0.999))
        self.optimizer_H = torch.optim.Adam(self.netH.parameters(), lr=cfg['LR'], betas=(0.5, 0.999))
        self.real_pool = ImagePool(cfg['POOL_SIZE'])
        self.syn_pool = ImagePool(cfg['POOL_SIZE'])
        self.optimizer_D = torch.optim.SGD(self.netD.parameters(), lr=cfg['LR'], momentum=0.9)

    def set_input(self, inputs):
        self.input_syn_color = inputs['syn']['color']
        self.input_syn_dep = inputs['syn']['depth']
        self.input_syn_edge = inputs['syn']['edge']
        self.input_syn_norm = inputs['syn']['normal']
        self.input_real_color = inputs['real']

    def forward(self):
        self.feat_syn = self.netB(self.input_syn_color)
        self.head_pred = self.netH(self.feat_syn['out'])
        self.feat_real = self.netB(self.input_real_color)

    def backward_BH(self):
        self.task_pred = self.netH(self.feat_syn['out'])
        self.loss_dep = self.cfg['DEP_WEIGHT'] * self.criterionDepth1(self.task_pred['depth'], self.input_syn_dep)
        ch = self.task_pred['norm'].size(1)
        _pred = self.task_pred['norm'].permute(0, 2, 3, 1).contiguous().view(-1, ch)
        _gt = self.input_syn_norm.permute(0, 2, 3, 1).contiguous().view(-1, ch)
        cos_label = torch.ones(_gt.size(0))
        self.loss_norm = self.cfg['NORM_WEIGHT'] * self.criterionNorm(_pred, _gt, cos_label)
        self.loss_edge = self.cfg['EDGE_WEIGHT'] * nn.functional.binary_cross_entropy_with_logits(
            self.task_pred['edge'], self.input_syn_edge)

        ## combined loss
        loss = self.loss_edge + self.loss_norm + self.loss_dep

        if self.cfg['USE_DA']:
            pred_syn = self.netD(self.feat_syn[self.cfg['DA_LAYER']].detach())  # <- cut_term
            self.loss_DA = self.criterionGAN(pred_syn, True)
            loss += self.loss_DA * self.cfg['DA_WEIGHT']

        loss.backward()

    def backward_D(self):
        # stop backprop to netB by detaching
        _feat_s = self.syn_pool.query(self.feat_syn[self.cfg['DA_LAYER']].detach())
        pred_syn = self.netD(_feat_s)
        self.loss_D_syn = self.criterionGAN(pred_syn, False)
        _feat_r = self.real_pool.query(self.feat_real[self.cfg['DA_LAYER']].detach())
        pred_real = self.netD(_feat_r)
        self.loss_D_real = self.criterionGAN(pred_real, True)
        self.loss_D = (self.loss_D_syn + self.loss_D_real) * 0.5
        self.loss_D.backward()

    def optimize(self):
        self.forward()
        if self.cfg['USE_DA']:
            self.set_requires_grad(self.netD, True)
            self.set_requires_grad([self.netB, self.netH], False)
            self.optimizer_D.zero_grad()
            self.backward_D()
            self.optimizer_D.step()

        # update on synthetic data
        self.set_requires_grad([self.netB, self.netH], True)
        self.set_requires_grad(self.netD, False)
        self.optimizer_B.zero_grad()
        self.optimizer_H.zero_grad()
        self.backward_BH()
        self.optimizer_B.step()
        self.optimizer_H.step()

    def set_requires_grad(self, nets, requires_grad=False):
        if not isinstance(nets, list):
            nets = [nets]
        for net in nets:
            if net is not None:
                for param in net.parameters():
                    param.requires_grad = requires_grad


cfg = {'DA_LAYER': 'conv5', 'USE_DA': True, 'LR': 1e-3, 'POOL_SIZE': 0,
       'DEP_WEIGHT': 1.0, 'NORM_WEIGHT': 1.0, 'EDGE_WEIGHT': 1.0, 'DA_WEIGHT': 0.05}
model = Model()
model.initialize(cfg)
for step in range(3):
    inputs = {'syn': {'color': torch.randn(2, 3, 16, 16), 'depth': torch.randn(2, 1, 8, 8),
                      'edge': torch.rand(2, 1, 8, 8).round(), 'normal': torch.randn(2, 3, 8, 8)},
              'real': torch.randn(2, 3, 16, 16)}
    model.set_input(inputs)
    model.optimize()
    print('step %d  loss_dep %.4f  loss_norm %.4f  loss_edge %.4f  loss_D %.4f  loss_DA %.4f'
          % (step, model.loss_dep.item(), model.loss_norm.item(), model.loss_edge.item(), model.loss_D.item(), model.loss_DA.item()))
