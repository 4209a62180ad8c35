"""leftthomas/SRGAN issue #89, "RuntimeError: one of the variables needed for gradient computation has been modified by an
inplace operation: [torch.cuda.FloatTensor [1, 1024, 1, 1]] is at version 2; expected version 1 instead",
https://github.com/leftthomas/SRGAN/issues/89: train.py updates the discriminator first (d_loss.backward(retain_graph=True);
optimizerD.step()) and then builds the generator's loss from the same fake_out = netD(fake_img).mean() computed before
that step: g_loss = generator_criterion(fake_out, fake_img, real_img). optimizerD.step() rewrote netD's weights in place,
and g_loss.backward() still needs the versions netD's convolutions saved, so it raises (PyTorch >= 1.5).
The repo's fix (lines added "to prevent runtime error"): recompute fake_img = netG(z) and fake_out = netD(fake_img).mean()
after the discriminator step, before g_loss. Small networks stand in for SRGAN's, a frozen random conv net for the VGG16
loss network, random tensors for DIV2K crops. This fixed twin applies the repo's fix; both networks train."""
import torch
import torch.nn as nn
import torch.optim as optim

torch.manual_seed(0)
torch.set_num_threads(1)


class Generator(nn.Module):
    def __init__(self, scale_factor):
        super().__init__()
        self.block1 = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.PReLU())
        self.upsample = nn.Sequential(nn.Conv2d(16, 16 * scale_factor ** 2, 3, padding=1),
                                      nn.PixelShuffle(scale_factor), nn.PReLU())
        self.out = nn.Conv2d(16, 3, 3, padding=1)

    def forward(self, x):
        return (torch.tanh(self.out(self.upsample(self.block1(x)))) + 1) / 2


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.LeakyReLU(0.2),
                                 nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.LeakyReLU(0.2),
                                 nn.AdaptiveAvgPool2d(1), nn.Conv2d(32, 64, 1), nn.LeakyReLU(0.2), nn.Conv2d(64, 1, 1))

    def forward(self, x):
        return torch.sigmoid(self.net(x).view(x.size(0)))


class GeneratorLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.loss_network = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU()).eval()  # stands in for VGG16
        for param in self.loss_network.parameters():
            param.requires_grad = False
        self.mse_loss = nn.MSELoss()

    def forward(self, out_labels, out_images, target_images):
        adversarial_loss = torch.mean(1 - out_labels)
        perception_loss = self.mse_loss(self.loss_network(out_images), self.loss_network(target_images))
        image_loss = self.mse_loss(out_images, target_images)
        return image_loss + 0.001 * adversarial_loss + 0.006 * perception_loss


netG = Generator(2)
netD = Discriminator()
generator_criterion = GeneratorLoss()
optimizerG = optim.Adam(netG.parameters())
optimizerD = optim.Adam(netD.parameters())
train_loader = [(torch.rand(4, 3, 8, 8), torch.rand(4, 3, 16, 16)) for _ in range(3)]  # (LR, HR) crops
g_before = netG.out.weight.detach().clone()
d_before = netD.net[0].weight.detach().clone()

for epoch in range(1, 3):
    running_results = {'batch_sizes': 0, 'd_loss': 0, 'g_loss': 0}
    netG.train()
    netD.train()
    for data, target in train_loader:
        batch_size = data.size(0)
        running_results['batch_sizes'] += batch_size
        # (1) Update D network: maximize D(x)-1-D(G(z))
        real_img = target
        z = data
        fake_img = netG(z)
        netD.zero_grad()
        real_out = netD(real_img).mean()
        fake_out = netD(fake_img).mean()
        d_loss = 1 - real_out + fake_out
        d_loss.backward(retain_graph=True)
        optimizerD.step()
        # (2) Update G network: minimize 1-D(G(z)) + Perception Loss + Image Loss
        netG.zero_grad()
        fake_img = netG(z)
        fake_out = netD(fake_img).mean()
        g_loss = generator_criterion(fake_out, fake_img, real_img)
        g_loss.backward()
        fake_img = netG(z)
        fake_out = netD(fake_img).mean()
        optimizerG.step()
        running_results['g_loss'] += g_loss.item() * batch_size
        running_results['d_loss'] += d_loss.item() * batch_size
    print('[%d] Loss_D: %.4f Loss_G: %.4f' % (epoch, running_results['d_loss'] / running_results['batch_sizes'],
                                             running_results['g_loss'] / running_results['batch_sizes']))

print("generator changed:", not torch.equal(g_before, netG.out.weight))
print("discriminator changed:", not torch.equal(d_before, netD.net[0].weight))
