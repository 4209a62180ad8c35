"""Wasserstein GAN with weight clipping, reduced from the authors' code martinarjovsky/WassersteinGAN
(https://github.com/martinarjovsky/WassersteinGAN/blob/master/main.py and models/mlp.py).

Patterns kept (each looks like a cut but is right):
- ``for p in netD.parameters(): p.requires_grad = True`` before the critic loop and ``= False`` before the
  generator step ("to avoid computation"): the critic is frozen only while the generator learns through it.
- ``for p in netD.parameters(): p.data.clamp_(clamp_lower, clamp_upper)``: the in-place write through
  ``.data`` is the Lipschitz constraint of the method, applied outside autograd on purpose.
- ``fake = netG(noisev).detach()`` (``Variable(netG(noisev).data)`` in the original, "totally freeze
  netG"): the critic loss must not reach the generator.
- ``errD_real.backward(one)`` / ``errD_fake.backward(mone)`` with ``mone = one * -1``: gradients are
  accumulated with explicit signs instead of building ``errD``; ``errD = errD_real - errD_fake`` is then
  only logged.
- ``input.resize_as_(real_cpu).copy_(real_cpu)`` and ``noise.resize_(...).normal_(0, 1)``: reused input
  buffers written in place; they are data, not parameters.
- the critic's last layer has no bias, as in the repo's DCGAN_D: a constant cancels in the Wasserstein
  estimate, so such a bias would only ever get a zero gradient.
- at the end the critic's parameters are left with ``requires_grad = False`` from the last generator step,
  exactly as in main.py; they were trained in every critic loop.
- Diters = 100 for the first generator iterations (here scaled down): many critic steps per generator step.
"""
import os

import torch
import torch.nn as nn


class MLP_G(nn.Module):
    def __init__(self, isize, nz, nc, ngf):
        super().__init__()
        self.main = nn.Sequential(
            nn.Linear(nz, ngf), nn.ReLU(True), nn.Linear(ngf, ngf), nn.ReLU(True),
            nn.Linear(ngf, nc * isize * isize))
        self.nc, self.isize, self.nz = nc, isize, nz

    def forward(self, input):
        input = input.view(input.size(0), input.size(1))
        output = self.main(input)
        return output.view(output.size(0), self.nc, self.isize, self.isize)


class MLP_D(nn.Module):
    def __init__(self, isize, nz, nc, ndf):
        super().__init__()
        self.main = nn.Sequential(
            nn.Linear(nc * isize * isize, ndf), nn.ReLU(True), nn.Linear(ndf, ndf), nn.ReLU(True),
            nn.Linear(ndf, 1, bias=False))  # a bias cancels in E[D(real)] - E[D(fake)] (cf. DCGAN_D)
        self.nc, self.isize, self.nz = nc, isize, nz

    def forward(self, input):
        input = input.view(input.size(0), input.size(1) * input.size(2) * input.size(3))
        output = self.main(input)
        output = output.mean(0)
        return output.view(1)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    isize, nz, nc, ngf, ndf, batch_size = 8, 8, 1, 32, 32, 16
    clamp_lower, clamp_upper, lrD, lrG = -0.01, 0.01, 5e-4, 5e-4
    netG = MLP_G(isize, nz, nc, ngf)
    netD = MLP_D(isize, nz, nc, ndf)
    dataset = torch.tanh(torch.randn(96, nc, isize, isize) * 0.5 + 0.3)

    input = torch.FloatTensor(batch_size, nc, isize, isize)
    noise = torch.FloatTensor(batch_size, nz, 1, 1)
    fixed_noise = torch.FloatTensor(batch_size, nz, 1, 1).normal_(0, 1)
    one = torch.FloatTensor([1])
    mone = one * -1

    optimizerD = torch.optim.RMSprop(netD.parameters(), lr=lrD)
    optimizerG = torch.optim.RMSprop(netG.parameters(), lr=lrG)

    gen_iterations = 0
    for epoch in range(2):
        perm = torch.randperm(dataset.size(0))
        i = 0
        while i < dataset.size(0) // batch_size:
            # (1) Update D network
            for p in netD.parameters():
                p.requires_grad = True
            Diters = 5 if gen_iterations < 2 else 2
            j = 0
            while j < Diters and i < dataset.size(0) // batch_size:
                j += 1
                for p in netD.parameters():
                    p.data.clamp_(clamp_lower, clamp_upper)
                real_cpu = dataset[perm[i * batch_size:(i + 1) * batch_size]]
                i += 1
                netD.zero_grad()
                input.resize_as_(real_cpu).copy_(real_cpu)
                errD_real = netD(input)
                errD_real.backward(one)
                noise.resize_(batch_size, nz, 1, 1).normal_(0, 1)
                fake = netG(noise).detach()  # totally freeze netG
                errD_fake = netD(fake)
                errD_fake.backward(mone)
                errD = errD_real - errD_fake
                optimizerD.step()
            # (2) Update G network
            for p in netD.parameters():
                p.requires_grad = False  # to avoid computation
            netG.zero_grad()
            noise.resize_(batch_size, nz, 1, 1).normal_(0, 1)
            fake = netG(noise)
            errG = netD(fake)
            errG.backward(one)
            optimizerG.step()
            gen_iterations += 1
            print(f"[{epoch}][{i}] gen_iter {gen_iterations} Loss_D {errD.item():.6f} Loss_G {errG.item():.6f} "
                  f"Loss_D_real {errD_real.item():.6f} Loss_D_fake {errD_fake.item():.6f}")
    with torch.no_grad():
        print(f"fixed-noise sample mean {netG(fixed_noise).mean().item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"netG": netG.state_dict(), "netD": netD.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
