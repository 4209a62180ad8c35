"""cy-xu/simple_CycleGAN, https://github.com/cy-xu/simple_CycleGAN/issues/3

What the user saw: with PyTorch >= 1.5 training stops at the discriminator's backward with "RuntimeError:
one of the variables needed for gradient computation has been modified by an inplace operation:
[torch.cuda.FloatTensor [3, 64, 7, 7]] is at version 3; expected version 1 instead" (a generator weight).
Why: fake_y = netG_x(real_x) keeps the generator's graph (loss_X.backward(retain_graph=True)), then
optimizer_g.step() updates the generators' weights in place; netD_x's loss is computed from that same
fake_y, so loss_D_x.backward() runs back into netG_x and needs the weights as they were (saved at forward).
PyTorch < 1.5 did not check this and silently used the new weights.
Fix: the discriminator must not backpropagate into the generator: pred_fake = netD_x(fake_y.detach())
(the usual CycleGAN code; the same for netD_y and fake_x).
"""
import torch as t
import torch.nn as nn

t.manual_seed(0)
netG_x, netG_y = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 6)), nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 6))
netD_x, netD_y = nn.Sequential(nn.Linear(6, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1)), nn.Sequential(nn.Linear(6, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
optimizer_g = t.optim.Adam(list(netG_x.parameters()) + list(netG_y.parameters()), lr=2e-4, betas=(0.5, 0.999))
optimizer_d = t.optim.Adam(list(netD_x.parameters()) + list(netD_y.parameters()), lr=2e-4, betas=(0.5, 0.999))
mse, l1 = nn.MSELoss(), nn.L1Loss()
criterionGAN = lambda pred, is_real: mse(pred, t.full_like(pred, 1.0 if is_real else 0.0))
lambda_X = lambda_Y = 10.0

for i in range(3):
    real_x, real_y = t.randn(4, 6), t.randn(4, 6) + 1.0
    # X -> Y' -> X^ cycle
    optimizer_g.zero_grad()
    fake_y = netG_x(real_x)
    loss_G_X = criterionGAN(netD_x(fake_y), True)
    loss_cycle_X = l1(netG_y(fake_y), real_x) * lambda_X
    loss_X = loss_G_X + loss_cycle_X
    loss_X.backward(retain_graph=True)
    optimizer_g.step()
    # Y -> X' -> Y^ cycle
    optimizer_g.zero_grad()
    fake_x = netG_y(real_y)
    loss_G_Y = criterionGAN(netD_y(fake_x), True)
    loss_cycle_Y = l1(netG_x(fake_x), real_y) * lambda_Y
    loss_Y = loss_G_Y + loss_cycle_Y
    loss_Y.backward(retain_graph=True)
    optimizer_g.step()
    # netD_x
    optimizer_d.zero_grad()
    loss_D_x_real = criterionGAN(netD_x(real_y), True)
    pred_fake = netD_x(fake_y.detach())
    loss_D_x_fake = criterionGAN(pred_fake, False)
    loss_D_x = (loss_D_x_real + loss_D_x_fake) * 0.5
    loss_D_x.backward()
    optimizer_d.step()
    # netD_y
    optimizer_d.zero_grad()
    loss_D_y_real = criterionGAN(netD_y(real_x), True)
    pred_fake = netD_y(fake_x.detach())
    loss_D_y_fake = criterionGAN(pred_fake, False)
    loss_D_y = (loss_D_y_real + loss_D_y_fake) * 0.5
    loss_D_y.backward()
    optimizer_d.step()
    print(i, round(loss_X.item(), 4), round(loss_Y.item(), 4), round(loss_D_x.item(), 4), round(loss_D_y.item(), 4))
