"""BPPNet (ayu-22/BPPNet-Back-Projected-Pyramid-Network) issue #6 "one of the variables needed for gradient
computation has been modified by an inplace operation",
https://github.com/ayu-22/BPPNet-Back-Projected-Pyramid-Network/issues/6: training the dehazing GAN
(Single_Image_Dehazing.ipynb) on O-Haze / I-Haze stops at the first batch with "RuntimeError: one of the variables
needed for gradient computation has been modified by an inplace operation: [... [1, 512, 4, 4]] ... is at version 2;
expected version 1". DU_Net.process() computes the discriminator loss and the UNet (generator) loss in one go, the
latter through `self.discriminator(outputs)`, so the discriminator's weights are saved for the generator's backward.
DU_Net.backward() then runs `dis_loss.backward(retain_graph=True)` and `self.dis_optimizer.step()`, which updates
the discriminator's weights in place, before `unet_loss.backward()` needs them. The author answered that the
discriminator step has to happen only after the generator loss no longer needs the old discriminator (or the
generator loss must be recomputed after the step).
Fix (line numbers kept): run the generator's backward, restricted to the UNet's parameters, before the
discriminator's optimizer step, so the in-place update comes after every backward that saved the old weights. The
UNet, discriminator and AdversarialLoss are shortened stand-ins (spectral norm, the pyramid convolutions, the VGG
content loss and the SSIM term are left out); images are small random tensors; the script raises the user's error.
"""
import torch
import torch.nn as nn
import torch.optim as optim


# --- UNet generator stand-in (the notebook's 4-block UNet + pyramid convolution, shortened) ----
class UNet(nn.Module):
    def __init__(self, in_channels=3, out_channels=3, features=8):
        super(UNet, self).__init__()
        self.encoder1 = nn.Sequential(nn.Conv2d(in_channels, features, 3, padding=1, bias=False),
                                      nn.BatchNorm2d(features), nn.ReLU(inplace=True))
        self.pool1 = nn.MaxPool2d(kernel_size=2, stride=2)
        self.bottleneck = nn.Sequential(nn.Conv2d(features, features * 2, 3, padding=1, bias=False),
                                        nn.BatchNorm2d(features * 2), nn.ReLU(inplace=True))
        self.upconv1 = nn.ConvTranspose2d(features * 2, features, kernel_size=2, stride=2)
        self.decoder1 = nn.Sequential(nn.Conv2d(features * 2, features, 3, padding=1, bias=False),
                                      nn.BatchNorm2d(features), nn.ReLU(inplace=True))
        self.conv = nn.Conv2d(features, out_channels, kernel_size=1)

    def forward(self, x):
        enc1 = self.encoder1(x)
        bottleneck = self.bottleneck(self.pool1(enc1))
        dec1 = self.upconv1(bottleneck)
        dec1 = torch.cat((dec1, enc1), dim=1)
        dec1 = self.decoder1(dec1)
        return torch.sigmoid(self.conv(dec1))


# --- Discriminator (the notebook's PatchGAN, spectral norm left out) ----------------------------
class Discriminator(nn.Module):
    def __init__(self, in_channels, use_sigmoid=True):
        super().__init__()
        self.use_sigmoid = use_sigmoid
        self.conv1 = nn.Sequential(nn.Conv2d(in_channels, 16, kernel_size=4, stride=2, padding=1),
                                   nn.LeakyReLU(0.2, inplace=True))
        self.conv2 = nn.Sequential(nn.Conv2d(16, 32, kernel_size=4, stride=2, padding=1),
                                   nn.LeakyReLU(0.2, inplace=True))
        self.conv5 = nn.Sequential(nn.Conv2d(32, 1, kernel_size=4, stride=1, padding=1))

    def forward(self, x):
        conv1 = self.conv1(x)
        conv2 = self.conv2(conv1)
        conv5 = self.conv5(conv2)
        outputs = conv5
        if self.use_sigmoid:
            outputs = torch.sigmoid(conv5)
        return outputs, [conv1, conv2, conv5]


# --- AdversarialLoss (nsgan: BCE against constant real/fake labels) ------------------------------
class AdversarialLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer('real_label', torch.tensor(1.0))
        self.register_buffer('fake_label', torch.tensor(0.0))
        self.criterion = nn.BCELoss()

    def __call__(self, outputs, is_real, is_disc=None):
        labels = (self.real_label if is_real else self.fake_label).expand_as(outputs)
        return self.criterion(outputs, labels)


# --- DU_Net (the notebook's training wrapper) ----------------------------------------------------
class DU_Net(nn.Module):
    def __init__(self, unet_input, unet_output, discriminator_input):
        super().__init__()
        self.unet = UNet(in_channels=unet_input, out_channels=unet_output)
        self.discriminator = Discriminator(in_channels=discriminator_input, use_sigmoid=True)
        self.criterion = nn.MSELoss()
        self.adversarial_loss = AdversarialLoss()
        self.unet_optimizer = optim.Adam(self.unet.parameters(), lr=1e-3, betas=(0.5, 0.999))
        self.dis_optimizer = optim.Adam(self.discriminator.parameters(), lr=1e-4, betas=(0.5, 0.999))

    def process(self, haze_images, dehaze_images):
        # zero optimizers
        self.unet_optimizer.zero_grad()
        self.dis_optimizer.zero_grad()

        # find output and initialize loss to zero
        unet_loss = 0
        dis_loss = 0

        outputs = self.unet(haze_images)

        # discriminator loss
        dis_real, dis_real_feat = self.discriminator(dehaze_images)
        dis_fake, dis_fake_feat = self.discriminator(outputs.detach())
        dis_real_loss = self.adversarial_loss(dis_real, True, True)
        dis_fake_loss = self.adversarial_loss(dis_fake, False, True)
        dis_loss += (dis_real_loss + dis_fake_loss) / 2

        # unet loss
        unet_fake, unet_fake_feat = self.discriminator(outputs)
        unet_gan_loss = self.adversarial_loss(unet_fake, True, False) * 0.7
        unet_loss += unet_gan_loss

        unet_criterion = self.criterion(outputs, dehaze_images)
        unet_loss += unet_criterion

        return unet_loss, dis_loss, unet_criterion

    def backward(self, unet_loss, dis_loss):
        dis_loss.backward(retain_graph = True)
        self.dis_optimizer.step()  # <- inplace_saved
        unet_loss.backward()
        self.unet_optimizer.step()


def train(max_epochs, train_loader):
    for epoch in range(max_epochs):
        i = 1
        for haze_images, dehaze_images, in train_loader:
            unet_loss, dis_loss, mse = DUNet.process(haze_images, dehaze_images)
            DUNet.backward(unet_loss, dis_loss)
            print('Epoch: ' + str(epoch + 1) + ' || Batch: ' + str(i) + " || unet loss: " + str(unet_loss.item())
                  + " || dis loss: " + str(dis_loss.item()) + " || mse: " + str(mse.item()))
            i = i + 1


torch.manual_seed(0)
torch.set_num_threads(1)
train_loader = [(torch.rand(2, 3, 32, 32), torch.rand(2, 3, 32, 32)) for _ in range(3)]
DUNet = DU_Net(3, 3, 3)
unet_before = DUNet.unet.conv.weight.detach().clone()
dis_before = DUNet.discriminator.conv1[0].weight.detach().clone()
train(2, train_loader)
print("unet changed:", not torch.equal(unet_before, DUNet.unet.conv.weight))
print("discriminator changed:", not torch.equal(dis_before, DUNet.discriminator.conv1[0].weight))
