# "Bugs in `.backward()` while training PCNet-C." -- XiaohangZhan/deocclusion issue #38
# https://github.com/XiaohangZhan/deocclusion/issues/38   (fix: PR #39, same symptom as issue #27)
# PartialCompletionContentCGAN.step() updates the discriminator first:
#     optimD.zero_grad(); dis_loss.backward(); optimD.step()
# and only then runs gen_loss.backward(). gen_loss was built through netD(output) in the same
# forward, so autograd saved netD's weights; optimD.step() has since changed them in place, and
# gen_loss.backward() raises "one of the variables needed for gradient computation has been
# modified by an inplace operation: [torch.cuda.FloatTensor [1, 512, 4, 4]] is at version 2".
# The generator (self.model) gets no gradient and is never trained.
# Fix (PR #39): run the generator update (zero_grad / gen_loss.backward / step) first, then
# the discriminator update (zero_grad / dis_loss.backward / step).
# Miniature: same class layout, tiny generator + spectral-norm InpaintDiscriminator on CPU.
import torch
import torch.nn as nn

torch.manual_seed(0)


# ---------------- utils ----------------
def average_gradients(model):
    """Single process: world_size 1, nothing to all-reduce."""
    for param in model.parameters():
        if param.requires_grad and param.grad is not None:
            param.grad.data /= 1


# ---------------- backbone ----------------
class FixModule(nn.Module):
    def __init__(self, m):
        super(FixModule, self).__init__()
        self.module = m

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)


class PConvUNet(nn.Module):  # tiny stand-in for the partial-conv UNet
    def __init__(self, input_channels=3):
        super(PConvUNet, self).__init__()
        self.enc = nn.Sequential(nn.Conv2d(input_channels * 2, 16, 3, padding=1), nn.ReLU(),
                                 nn.Conv2d(16, 16, 3, padding=1), nn.ReLU())
        self.dec = nn.Conv2d(16, 3, 3, padding=1)

    def forward(self, x, mask):
        h = self.enc(torch.cat([x * mask, mask], dim=1))
        return torch.tanh(self.dec(h)), mask


def spectral_norm(module, mode=True):
    if mode:
        return nn.utils.spectral_norm(module)
    return module


class InpaintDiscriminator(nn.Module):
    def __init__(self, in_channels, use_sigmoid=True, use_spectral_norm=True, nf=8):
        super(InpaintDiscriminator, self).__init__()
        self.use_sigmoid = use_sigmoid
        self.conv1 = self.features = nn.Sequential(
            spectral_norm(nn.Conv2d(in_channels, nf, 4, 2, 1, bias=not use_spectral_norm), use_spectral_norm),
            nn.LeakyReLU(0.2, inplace=True))
        self.conv2 = nn.Sequential(
            spectral_norm(nn.Conv2d(nf, nf * 2, 4, 2, 1, bias=not use_spectral_norm), use_spectral_norm),
            nn.LeakyReLU(0.2, inplace=True))
        self.conv3 = nn.Sequential(
            spectral_norm(nn.Conv2d(nf * 2, nf * 4, 4, 2, 1, bias=not use_spectral_norm), use_spectral_norm),
            nn.LeakyReLU(0.2, inplace=True))
        self.conv4 = nn.Sequential(
            spectral_norm(nn.Conv2d(nf * 4, nf * 8, 4, 1, 1, bias=not use_spectral_norm), use_spectral_norm),
            nn.LeakyReLU(0.2, inplace=True))
        self.conv5 = nn.Sequential(
            spectral_norm(nn.Conv2d(nf * 8, 1, 4, 1, 1, bias=not use_spectral_norm), use_spectral_norm))

    def forward(self, x):
        conv1 = self.conv1(x)
        conv2 = self.conv2(conv1)
        conv3 = self.conv3(conv2)
        conv4 = self.conv4(conv3)
        conv5 = self.conv5(conv4)
        outputs = conv5
        if self.use_sigmoid:
            outputs = torch.sigmoid(conv5)
        return outputs, [conv1, conv2, conv3, conv4, conv5]


# ---------------- losses ----------------
class AdversarialLoss(nn.Module):
    def __init__(self, type='nsgan', target_real_label=1.0, target_fake_label=0.0):
        super(AdversarialLoss, self).__init__()
        self.type = type
        self.register_buffer('real_label', torch.tensor(target_real_label))
        self.register_buffer('fake_label', torch.tensor(target_fake_label))
        self.criterion = nn.BCELoss()

    def __call__(self, outputs, is_real, is_disc=None):
        labels = (self.real_label if is_real else self.fake_label).expand_as(outputs)
        return self.criterion(outputs, labels)


class InpaintingLoss(nn.Module):  # VGG perceptual/style terms left out
    def __init__(self):
        super(InpaintingLoss, self).__init__()
        self.l1 = nn.L1Loss()

    def forward(self, input, mask, output, gt):
        loss_dict = {}
        output_comp = mask * input + (1 - mask) * output
        loss_dict['hole'] = self.l1((1 - mask) * output, (1 - mask) * gt)
        loss_dict['valid'] = self.l1(mask * output, mask * gt)
        loss_dict['tv'] = (output_comp[:, :, :, :-1] - output_comp[:, :, :, 1:]).abs().mean() + \
            (output_comp[:, :, :-1, :] - output_comp[:, :, 1:, :]).abs().mean()
        return loss_dict


# ---------------- model ----------------
class PartialCompletionContentCGAN(nn.Module):

    def __init__(self, params, dist_model=False):
        super(PartialCompletionContentCGAN, self).__init__()
        self.params = params
        self.with_modal = params.get('with_modal', False)

        # model
        self.model = FixModule(PConvUNet(**params['backbone_param']))
        self.world_size = 1

        # optim
        self.optim = torch.optim.Adam(
            filter(lambda p: p.requires_grad, self.model.parameters()), lr=params['lr'])

        # netD
        self.netD = FixModule(InpaintDiscriminator(**params['discriminator_params']))
        self.optimD = torch.optim.Adam(
            self.netD.parameters(), lr=params['lr'] * params['d2g_lr'], betas=(0.0, 0.9))

        # loss
        self.criterion = InpaintingLoss()
        self.gan_criterion = AdversarialLoss(type=params['gan_type'])

    def set_input(self, rgb, visible_mask, modal, rgb_gt=None):
        self.rgb = rgb
        self.visible_mask3 = visible_mask.repeat(1, 3, 1, 1)
        if rgb_gt is not None:
            self.rgb_gt = rgb_gt

    def step(self):
        # output
        output, _ = self.model(self.rgb, self.visible_mask3)

        # discriminator loss
        dis_input_real = self.rgb_gt
        dis_input_fake = output.detach()
        dis_real, _ = self.netD(dis_input_real)
        dis_fake, _ = self.netD(dis_input_fake)
        dis_real_loss = self.gan_criterion(dis_real, True, True) / self.world_size
        dis_fake_loss = self.gan_criterion(dis_fake, False, True) / self.world_size
        dis_loss = (dis_real_loss + dis_fake_loss) / 2

        # generator adversarial loss
        gen_loss = 0
        gen_input_fake = output
        gen_fake, _ = self.netD(gen_input_fake)
        gen_gan_loss = self.gan_criterion(gen_fake, True, False) * \
            self.params['adv_loss_weight'] / self.world_size
        gen_loss += gen_gan_loss

        # other losses
        loss_dict = self.criterion(self.rgb, self.visible_mask3, output, self.rgb_gt)
        for k in loss_dict.keys():
            loss_dict[k] /= self.world_size
        for key, coef in self.params['lambda_dict'].items():
            value = coef * loss_dict[key]
            gen_loss += value

        # create loss dict
        loss_dict['dis'] = dis_loss
        loss_dict['adv'] = gen_gan_loss

        # update
        self.optim.zero_grad()
        gen_loss.backward()
        average_gradients(self.model)
        self.optim.step()

        self.optimD.zero_grad()
        dis_loss.backward()
        average_gradients(self.netD)
        self.optimD.step()

        return loss_dict


params = {'backbone_param': {'input_channels': 3},
          'discriminator_params': {'in_channels': 3, 'use_sigmoid': True},
          'lr': 1e-3, 'd2g_lr': 0.1, 'gan_type': 'nsgan', 'adv_loss_weight': 0.1,
          'lambda_dict': {'valid': 1.0, 'hole': 6.0, 'tv': 0.1}}
net = PartialCompletionContentCGAN(params)
w0 = [p.detach().clone() for p in net.model.parameters()]
for it in range(3):
    rgb_gt = torch.rand(2, 3, 32, 32) * 2 - 1
    visible_mask = (torch.rand(2, 1, 32, 32) > 0.3).float()
    rgb = rgb_gt * visible_mask
    net.set_input(rgb, visible_mask, None, rgb_gt)
    loss_dict = net.step()
    print('iter', it, {k: round(float(v), 4) for k, v in loss_dict.items()})
g = net.model.module.dec.weight.grad
print('generator dec.weight.grad norm:', float(g.norm()))
print('generator weights changed:', any(not torch.equal(a, b) for a, b in zip(w0, net.model.parameters())))
