"""The fixed twin: optimizer_d is built from the discriminator's parameters."""
import numpy as np
import torch
import torch.nn as nn


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.coarse = nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), nn.ELU(), nn.Conv2d(8, 3, 3, padding=1), nn.Tanh())
        self.refine = nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), nn.ELU(), nn.Conv2d(8, 3, 3, padding=1), nn.Tanh())

    def forward(self, img, mask):
        first_out = self.coarse(torch.cat((img * (1 - mask), mask), 1))
        second_in = img * (1 - mask) + first_out * mask
        return first_out, self.refine(torch.cat((second_in, mask), 1))


class PatchDiscriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Sequential(nn.Conv2d(4, 8, 4, stride=2, padding=1), nn.LeakyReLU(0.2), nn.Conv2d(8, 1, 3, padding=1))

    def forward(self, img, mask):
        return self.block(torch.cat((img, mask), 1))


torch.manual_seed(0)
generator, discriminator = Generator(), PatchDiscriminator()
perceptualnet = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU())
for p in perceptualnet.parameters():
    p.requires_grad = False
L1Loss, MSELoss = nn.L1Loss(), nn.MSELoss()
optimizer_g = torch.optim.Adam(generator.parameters(), lr=1e-4, betas=(0.5, 0.999))
optimizer_d = torch.optim.Adam(discriminator.parameters(), lr=4e-4, betas=(0.5, 0.999))
img = torch.rand(2, 3, 16, 16) * 2 - 1
mask = torch.zeros(2, 1, 16, 16)
mask[:, :, 4:12, 4:12] = 1
Tensor = torch.FloatTensor
d_before = discriminator.block[0].weight.detach().clone()
for batch_idx in range(3):
    valid = Tensor(np.ones((img.shape[0], 1, 8, 8)))
    fake = Tensor(np.zeros((img.shape[0], 1, 8, 8)))
    optimizer_d.zero_grad()
    first_out, second_out = generator(img, mask)
    first_out_wholeimg = img * (1 - mask) + first_out * mask
    second_out_wholeimg = img * (1 - mask) + second_out * mask
    fake_scalar = discriminator(second_out_wholeimg.detach(), mask)
    true_scalar = discriminator(img, mask)
    loss_fake = MSELoss(fake_scalar, fake)
    loss_true = MSELoss(true_scalar, valid)
    loss_D = 0.5 * (loss_fake + loss_true)
    loss_D.backward()
    optimizer_d.step()
    optimizer_g.zero_grad()
    first_MaskL1Loss = L1Loss(first_out_wholeimg, img)
    second_MaskL1Loss = L1Loss(second_out_wholeimg, img)
    fake_scalar = discriminator(second_out_wholeimg, mask)
    GAN_Loss = MSELoss(fake_scalar, valid)
    second_PerceptualLoss = L1Loss(perceptualnet(second_out_wholeimg), perceptualnet(img))
    loss = first_MaskL1Loss + second_MaskL1Loss + 10 * second_PerceptualLoss + 0.01 * GAN_Loss
    loss.backward()
    optimizer_g.step()
    print(f"[Batch {batch_idx}] [D Loss: {loss_D.item():.5f}] [G Loss: {GAN_Loss.item():.5f}]")
print("discriminator changed:", not torch.equal(d_before, discriminator.block[0].weight))
