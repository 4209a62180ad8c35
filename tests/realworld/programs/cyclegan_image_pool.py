"""CycleGAN, reduced from junyanz/pytorch-CycleGAN-and-pix2pix
(https://github.com/junyanz/pytorch-CycleGAN-and-pix2pix: models/cycle_gan_model.py, models/base_model.py,
models/networks.py, util/image_pool.py).

Patterns kept (each looks like a cut but is right):
- ImagePool stores ``torch.unsqueeze(image.data, 0)`` and may return an older fake instead of the current
  one: the discriminator is trained on a history of generated images that need no generator gradient.
- ``backward_D_basic`` calls ``netD(fake.detach())``: the discriminator loss must not reach the generators.
- ``set_requires_grad([netD_A, netD_B], False)`` before the generator step and ``True`` before the
  discriminator step: D's weights are frozen while G learns through D, then unfrozen for D's own update.
- GANLoss keeps ``real_label``/``fake_label`` as registered buffers expanded to the prediction's shape.
- ``init.normal_(m.weight.data, 0.0, 0.02)`` in ``init_weights``: one-time initialisation.
- ``itertools.chain(netG_A.parameters(), netG_B.parameters())``: one optimizer for both generators and one
  for both discriminators; the identity loss feeds real images of the *other* domain through each G.
- instance norm with ``affine=False`` (the repo's default 'instance' norm) has no parameters by design.
"""
import functools
import itertools
import os
import random

import torch
import torch.nn as nn
from torch.nn import init


class ImagePool:
    def __init__(self, pool_size):
        self.pool_size = pool_size
        if self.pool_size > 0:
            self.num_imgs = 0
            self.images = []

    def query(self, images):
        if self.pool_size == 0:
            return images
        return_images = []
        for image in images:
            image = torch.unsqueeze(image.data, 0)
            if self.num_imgs < self.pool_size:
                self.num_imgs = self.num_imgs + 1
                self.images.append(image)
                return_images.append(image)
            else:
                p = random.uniform(0, 1)
                if p > 0.5:
                    random_id = random.randint(0, self.pool_size - 1)
                    tmp = self.images[random_id].clone()
                    self.images[random_id] = image
                    return_images.append(tmp)
                else:
                    return_images.append(image)
        return torch.cat(return_images, 0)


class GANLoss(nn.Module):
    def __init__(self, gan_mode='lsgan', target_real_label=1.0, target_fake_label=0.0):
        super().__init__()
        self.register_buffer('real_label', torch.tensor(target_real_label))
        self.register_buffer('fake_label', torch.tensor(target_fake_label))
        self.loss = nn.MSELoss() if gan_mode == 'lsgan' else nn.BCEWithLogitsLoss()

    def get_target_tensor(self, prediction, target_is_real):
        target_tensor = self.real_label if target_is_real else self.fake_label
        return target_tensor.expand_as(prediction)

    def __call__(self, prediction, target_is_real):
        return self.loss(prediction, self.get_target_tensor(prediction, target_is_real))


def init_weights(net, init_gain=0.02):
    def init_func(m):
        classname = m.__class__.__name__
        if hasattr(m, 'weight') and (classname.find('Conv') != -1 or classname.find('Linear') != -1):
            init.normal_(m.weight.data, 0.0, init_gain)
            if hasattr(m, 'bias') and m.bias is not None:
                init.constant_(m.bias.data, 0.0)
    net.apply(init_func)
    return net


class ResnetBlock(nn.Module):
    def __init__(self, dim, norm_layer):
        super().__init__()
        self.conv_block = nn.Sequential(
            nn.ReflectionPad2d(1), nn.Conv2d(dim, dim, 3, bias=True), norm_layer(dim), nn.ReLU(True),
            nn.ReflectionPad2d(1), nn.Conv2d(dim, dim, 3, bias=True), norm_layer(dim))

    def forward(self, x):
        return x + self.conv_block(x)


def resnet_generator(ngf=8, n_blocks=1):
    norm_layer = functools.partial(nn.InstanceNorm2d, affine=False, track_running_stats=False)
    model = [nn.ReflectionPad2d(3), nn.Conv2d(3, ngf, 7, bias=True), norm_layer(ngf), nn.ReLU(True),
             nn.Conv2d(ngf, ngf * 2, 3, stride=2, padding=1, bias=True), norm_layer(ngf * 2), nn.ReLU(True)]
    model += [ResnetBlock(ngf * 2, norm_layer) for _ in range(n_blocks)]
    model += [nn.ConvTranspose2d(ngf * 2, ngf, 3, stride=2, padding=1, output_padding=1, bias=True),
              norm_layer(ngf), nn.ReLU(True),
              nn.ReflectionPad2d(3), nn.Conv2d(ngf, 3, 7), nn.Tanh()]
    return init_weights(nn.Sequential(*model))


def nlayer_discriminator(ndf=8):
    norm_layer = functools.partial(nn.InstanceNorm2d, affine=False, track_running_stats=False)
    model = [nn.Conv2d(3, ndf, 4, stride=2, padding=1), nn.LeakyReLU(0.2, True),
             nn.Conv2d(ndf, ndf * 2, 4, stride=2, padding=1, bias=True), norm_layer(ndf * 2),
             nn.LeakyReLU(0.2, True),
             nn.Conv2d(ndf * 2, 1, 4, stride=1, padding=1)]
    return init_weights(nn.Sequential(*model))


class CycleGANModel:
    def __init__(self, lambda_A=10.0, lambda_B=10.0, lambda_identity=0.5, lr=2e-4, pool_size=4):
        self.netG_A, self.netG_B = resnet_generator(), resnet_generator()
        self.netD_A, self.netD_B = nlayer_discriminator(), nlayer_discriminator()
        self.lambda_A, self.lambda_B, self.lambda_idt = lambda_A, lambda_B, lambda_identity
        self.fake_A_pool, self.fake_B_pool = ImagePool(pool_size), ImagePool(pool_size)
        self.criterionGAN = GANLoss('lsgan')
        self.criterionCycle = nn.L1Loss()
        self.criterionIdt = nn.L1Loss()
        self.optimizer_G = torch.optim.Adam(itertools.chain(self.netG_A.parameters(), self.netG_B.parameters()),
                                            lr=lr, betas=(0.5, 0.999))
        self.optimizer_D = torch.optim.Adam(itertools.chain(self.netD_A.parameters(), self.netD_B.parameters()),
                                            lr=lr, betas=(0.5, 0.999))
        self.optimizers = [self.optimizer_G, self.optimizer_D]
        n_epochs, n_epochs_decay = 1, 2
        lambda_rule = lambda epoch: 1.0 - max(0, epoch + 1 - n_epochs) / float(n_epochs_decay + 1)
        self.schedulers = [torch.optim.lr_scheduler.LambdaLR(o, lr_lambda=lambda_rule) for o in self.optimizers]

    def set_input(self, real_A, real_B):
        self.real_A, self.real_B = real_A, real_B

    def forward(self):
        self.fake_B = self.netG_A(self.real_A)
        self.rec_A = self.netG_B(self.fake_B)
        self.fake_A = self.netG_B(self.real_B)
        self.rec_B = self.netG_A(self.fake_A)

    def backward_D_basic(self, netD, real, fake):
        loss_D_real = self.criterionGAN(netD(real), True)
        loss_D_fake = self.criterionGAN(netD(fake.detach()), False)
        loss_D = (loss_D_real + loss_D_fake) * 0.5
        loss_D.backward()
        return loss_D

    def backward_D_A(self):
        fake_B = self.fake_B_pool.query(self.fake_B)
        self.loss_D_A = self.backward_D_basic(self.netD_A, self.real_B, fake_B)

    def backward_D_B(self):
        fake_A = self.fake_A_pool.query(self.fake_A)
        self.loss_D_B = self.backward_D_basic(self.netD_B, self.real_A, fake_A)

    def backward_G(self):
        self.idt_A = self.netG_A(self.real_B)
        self.loss_idt_A = self.criterionIdt(self.idt_A, self.real_B) * self.lambda_B * self.lambda_idt
        self.idt_B = self.netG_B(self.real_A)
        self.loss_idt_B = self.criterionIdt(self.idt_B, self.real_A) * self.lambda_A * self.lambda_idt
        self.loss_G_A = self.criterionGAN(self.netD_A(self.fake_B), True)
        self.loss_G_B = self.criterionGAN(self.netD_B(self.fake_A), True)
        self.loss_cycle_A = self.criterionCycle(self.rec_A, self.real_A) * self.lambda_A
        self.loss_cycle_B = self.criterionCycle(self.rec_B, self.real_B) * self.lambda_B
        self.loss_G = (self.loss_G_A + self.loss_G_B + self.loss_cycle_A + self.loss_cycle_B
                       + self.loss_idt_A + self.loss_idt_B)
        self.loss_G.backward()

    @staticmethod
    def set_requires_grad(nets, requires_grad=False):
        if not isinstance(nets, list):
            nets = [nets]
        for net in nets:
            if net is not None:
                for param in net.parameters():
                    param.requires_grad = requires_grad

    def optimize_parameters(self):
        self.forward()
        self.set_requires_grad([self.netD_A, self.netD_B], False)
        self.optimizer_G.zero_grad()
        self.backward_G()
        self.optimizer_G.step()
        self.set_requires_grad([self.netD_A, self.netD_B], True)
        self.optimizer_D.zero_grad()
        self.backward_D_A()
        self.backward_D_B()
        self.optimizer_D.step()

    def update_learning_rate(self):
        for scheduler in self.schedulers:
            scheduler.step()


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    random.seed(0)
    model = CycleGANModel()
    domain_A = torch.rand(6, 3, 16, 16) * 2 - 1
    domain_B = (torch.rand(6, 3, 16, 16) * 2 - 1).flip(1) * 0.5
    for epoch in range(2):
        for i in range(0, 6, 2):
            model.set_input(domain_A[i:i + 2], domain_B[i:i + 2])
            model.optimize_parameters()
            print(f"epoch {epoch} iter {i // 2} G {model.loss_G.item():.6f} "
                  f"D_A {model.loss_D_A.item():.6f} D_B {model.loss_D_B.item():.6f}")
        model.update_learning_rate()
    if os.environ.get("REALWORLD_STATE"):
        torch.save({name: getattr(model, 'net' + name).state_dict() for name in ['G_A', 'G_B', 'D_A', 'D_B']},
                   os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
