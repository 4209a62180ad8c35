"""The fixed twin: the regularization switches requires_grad back on for discriminator_img, so its R1 step
updates it."""
import torch
import torch.nn.functional as F
from torch import autograd, nn


def requires_grad(model, flag=True):
    for p in model.parameters():
        p.requires_grad = flag


def d_r1_loss(real_pred, real_img):
    grad_real, = autograd.grad(outputs=real_pred.sum(), inputs=real_img, create_graph=True)
    return grad_real.pow(2).reshape(grad_real.shape[0], -1).sum(1).mean()


torch.manual_seed(0)
generator = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 10))
discriminator_img = nn.Sequential(nn.Linear(8, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
discriminator_seg = nn.Sequential(nn.Linear(10, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
d_img_optim = torch.optim.Adam(discriminator_img.parameters(), lr=2e-3)
d_seg_optim = torch.optim.Adam(discriminator_seg.parameters(), lr=2e-3)
g_optim = torch.optim.Adam(generator.parameters(), lr=2e-3)
real_img, real_mask = torch.randn(6, 8), torch.randn(6, 2)
r1, d_reg_every = 10.0, 1
for i in range(3):
    requires_grad(generator, False)
    requires_grad(discriminator_img, True)
    requires_grad(discriminator_seg, False)
    fake = generator(torch.randn(6, 4))
    d_img_loss = F.softplus(discriminator_img(fake[:, :8])).mean() + F.softplus(-discriminator_img(real_img)).mean()
    discriminator_img.zero_grad()
    d_img_loss.backward()
    d_img_optim.step()

    requires_grad(generator, False)
    requires_grad(discriminator_img, False)
    requires_grad(discriminator_seg, True)
    d_seg_loss = F.softplus(discriminator_seg(fake)).mean() + F.softplus(-discriminator_seg(torch.cat([real_img, real_mask], 1))).mean()
    discriminator_seg.zero_grad()
    d_seg_loss.backward()
    d_seg_optim.step()

    d_regularize = i % d_reg_every == 0
    if d_regularize:
        requires_grad(discriminator_img, True)
        before = discriminator_img[0].weight.detach().clone()
        real_img.requires_grad = True
        real_pred = discriminator_img(real_img)
        r1_img_loss = d_r1_loss(real_pred, real_img)
        discriminator_img.zero_grad()
        (r1 / 2 * r1_img_loss * d_reg_every + 0 * real_pred[0]).backward()
        d_img_optim.step()
        real_img.requires_grad = False
        print(f"iter {i}: r1_img_loss {r1_img_loss.item():.4f}, R1 step changed discriminator_img:",
              not torch.equal(before, discriminator_img[0].weight))

    requires_grad(generator, True)
    requires_grad(discriminator_img, False)
    requires_grad(discriminator_seg, False)
    fake = generator(torch.randn(6, 4))
    g_loss = F.softplus(-discriminator_img(fake[:, :8])).mean() + F.softplus(-discriminator_seg(fake)).mean()
    generator.zero_grad()
    g_loss.backward()
    g_optim.step()
