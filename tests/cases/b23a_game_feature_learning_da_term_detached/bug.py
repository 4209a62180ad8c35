"""jason718/game-feature-learning (domain adaptation of synthetic-to-real features with a feature-level
discriminator), issue #3 "Detach synthetic data for both D and B/H updating",
https://github.com/jason718/game-feature-learning/issues/3: "you detach the synthetic feature during updating
the B and H. If you do so, then network B will not be able to learn domain-invariant features because the
weights won't be able to be backproped to B because of detaching." The author: "this is a bug and I fixed it."
At run time loss_DA in backward_BH is computed from feat_syn.detach() through netD (whose parameters are frozen
for that step), so the term has no grad_fn and adds nothing to netB's update; only the task losses train netB.
Fix: feed self.feat_syn[DA_LAYER] itself to netD in backward_BH (the .detach() belongs only in backward_D).
networks.py (netB/netH/netD, GANLoss) and utils.ImagePool are small stand-ins."""
import torch
import torch.nn as nn


# --- networks.py / utils.py stand-ins --------------------------------------------------------
class netB_alexnet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv5 = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())

    def forward(self, x):
        conv5 = self.conv5(x)
        return {'conv5': conv5, 'out': conv5}


class netH_alexnet(nn.Module):
    def __init__(self):
        super().__init__()
        self.depth = nn.Conv2d(8, 1, 1)
        self.norm = nn.Conv2d(8, 3, 1)

    def forward(self, x):
        return {'depth': self.depth(x), 'norm': self.norm(x)}


class netD_alexnet(nn.Module):
    def __init__(self, layer):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(8, 8, 3, stride=2, padding=1), nn.LeakyReLU(0.2), nn.Conv2d(8, 1, 1))

    def forward(self, x):
        return self.net(x)


class GANLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.loss = nn.MSELoss()

    def __call__(self, input, target_is_real):
        target = torch.ones_like(input) if target_is_real else torch.zeros_like(input)
        return self.loss(input, target)


class ImagePool():
    def query(self, images):
        return images


# --- src/model.py ------------------------------------------------------------------------------
class Model():
    def initialize(self, cfg):
        self.cfg = cfg
        self.device = torch.device('cpu')
        self.netB = netB_alexnet()
        self.netH = netH_alexnet()
        self.netD = netD_alexnet(self.cfg['DA_LAYER'])
        self.criterionGAN = GANLoss()
        self.criterionDepth1 = torch.nn.MSELoss()
        self.criterionNorm = torch.nn.CosineEmbeddingLoss()
        self.optimizer_B = torch.optim.Adam(self.netB.parameters(), lr=cfg['LR'], betas=(cfg['BETA1'], cfg['BETA2']))
        self.optimizer_H = torch.optim.Adam(self.netH.parameters(), lr=cfg['LR'], betas=(cfg['BETA1'], cfg['BETA2']))
        self.real_pool = ImagePool()
        self.syn_pool = ImagePool()
        self.optimizer_D = torch.optim.SGD(self.netD.parameters(), lr=cfg['LR'], momentum=cfg['MOMENTUM'])

    def set_input(self, inputs):
        self.input_syn_color = inputs['syn']['color']
        self.input_syn_dep = inputs['syn']['depth']
        self.input_syn_norm = inputs['syn']['normal']
        self.input_real_color = inputs['real'][0]

    def forward(self):
        self.feat_syn = self.netB(self.input_syn_color)
        self.head_pred = self.netH(self.feat_syn['out'])
        self.feat_real = self.netB(self.input_real_color)

    def backward_BH(self):
        ## forward to compute prediction
        self.task_pred = self.netH(self.feat_syn['out'])

        # depth
        depth_diff = self.task_pred['depth'] - self.input_syn_dep
        _n = self.task_pred['depth'].size(0) * self.task_pred['depth'].size(2) * self.task_pred['depth'].size(3)
        loss_depth2 = depth_diff.sum().pow_(2).div_(_n).div_(_n)
        loss_depth1 = self.criterionDepth1(self.task_pred['depth'], self.input_syn_dep)
        self.loss_dep = self.cfg['DEP_WEIGHT'] * (loss_depth1 - loss_depth2) * 0.5

        # surface normal
        ch = self.task_pred['norm'].size(1)
        _pred = self.task_pred['norm'].permute(0, 2, 3, 1).contiguous().view(-1, ch)
        _gt = self.input_syn_norm.permute(0, 2, 3, 1).contiguous().view(-1, ch)
        _gt = (_gt / 127.5) - 1
        _pred = torch.nn.functional.normalize(_pred, dim=1)
        cos_label = torch.ones(_gt.size(0))
        self.loss_norm = self.cfg['NORM_WEIGHT'] * self.criterionNorm(_pred, _gt, cos_label)

        ## combined loss
        loss = self.loss_dep + self.loss_norm

        if self.cfg['USE_DA']:
            pred_syn = self.netD(self.feat_syn[self.cfg['DA_LAYER']].detach())  # <- cut_term
            self.loss_DA = self.criterionGAN(pred_syn, True)
            loss += self.loss_DA * self.cfg['DA_WEIGHT']

        loss.backward()

    def backward_D(self):
        ## Synthetic
        # stop backprop to netB by detaching
        _feat_s = self.syn_pool.query(self.feat_syn[self.cfg['DA_LAYER']].detach().cpu())
        pred_syn = self.netD(_feat_s.to(self.device))
        self.loss_D_syn = self.criterionGAN(pred_syn, False)

        ## Real
        _feat_r = self.real_pool.query(self.feat_real[self.cfg['DA_LAYER']].detach().cpu())
        pred_real = self.netD(_feat_r.to(self.device))
        self.loss_D_real = self.criterionGAN(pred_real, True)

        ## Combined
        self.loss_D = (self.loss_D_syn + self.loss_D_real) * 0.5
        self.loss_D.backward()

    def optimize(self):
        self.forward()
        # if DA, update on real data
        if self.cfg['USE_DA']:
            self.set_requires_grad(self.netD, True)
            self.set_requires_grad([self.netB, self.netH], False)
            self.optimizer_D.zero_grad()
            self.backward_D()
            self.optimizer_D.step()

        # update on synthetic data
        if self.cfg['USE_DA']:
            self.set_requires_grad([self.netB, self.netH], True)
            self.set_requires_grad(self.netD, False)
        self.optimizer_B.zero_grad()
        self.optimizer_H.zero_grad()
        self.backward_BH()
        self.optimizer_B.step()
        self.optimizer_H.step()

    # set requies_grad=Fasle to avoid computation
    def set_requires_grad(self, nets, requires_grad=False):
        if not isinstance(nets, list):
            nets = [nets]
        for net in nets:
            if net is not None:
                for param in net.parameters():
                    param.requires_grad = requires_grad


torch.manual_seed(0)
cfg = {'DA_LAYER': 'conv5', 'USE_DA': True, 'LR': 1e-3, 'BETA1': 0.5, 'BETA2': 0.999, 'MOMENTUM': 0.9,
       'DEP_WEIGHT': 1.0, 'NORM_WEIGHT': 1.0, 'DA_WEIGHT': 0.5}
model = Model()
model.initialize(cfg)
for step in range(3):
    model.set_input({'syn': {'color': torch.randn(2, 3, 8, 8), 'depth': torch.randn(2, 1, 8, 8),
                             'normal': torch.rand(2, 3, 8, 8) * 255},
                     'real': [torch.randn(2, 3, 8, 8) + 0.5]})
    model.optimize()
    print('step %d  Loss_D: %.4f  Loss_DA: %.4f  Loss_DA reaches netB: %s'
          % (step, model.loss_D.item(), model.loss_DA.item(), model.loss_DA.requires_grad))
