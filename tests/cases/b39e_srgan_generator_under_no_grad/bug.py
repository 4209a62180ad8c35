# SRGAN adversarial stage (shape of Lornatang/SRGAN-PyTorch train.py, mid 2021):
# the super-resolution image is produced under torch.no_grad(), then reused
# for the generator loss while the discriminator is frozen.
import torch
import torch.nn as nn

torch.manual_seed(0)


class Generator(nn.Module):
    def __init__(self, upscale_factor=2):
        super().__init__()
        self.conv1 = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1), nn.PReLU())
        self.trunk = nn.Sequential(nn.Conv2d(16, 16, 3, 1, 1), nn.BatchNorm2d(16), nn.PReLU())
        self.upsampling = nn.Sequential(nn.Conv2d(16, 16 * upscale_factor ** 2, 3, 1, 1),
                                        nn.PixelShuffle(upscale_factor), nn.PReLU())
        self.conv3 = nn.Conv2d(16, 3, 3, 1, 1)

    def forward(self, x):
        out1 = self.conv1(x)
        out = self.trunk(out1) + out1
        return self.conv3(self.upsampling(out))


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.LeakyReLU(0.2),
                                      nn.Conv2d(16, 32, 3, 2, 1), nn.LeakyReLU(0.2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(32 * 4 * 4, 1))

    def forward(self, x):
        return self.classifier(self.features(x))


class ContentLoss(nn.Module):
    """VGG-style feature loss with a frozen feature extractor."""

    def __init__(self):
        super().__init__()
        self.feature_extractor = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1), nn.ReLU(),
                                               nn.Conv2d(8, 8, 3, 1, 1), nn.ReLU()).eval()
        for parameters in self.feature_extractor.parameters():
            parameters.requires_grad = False

    def forward(self, sr, hr):
        return nn.functional.mse_loss(self.feature_extractor(sr), self.feature_extractor(hr))


generator = Generator()
discriminator = Discriminator()
pixel_criterion = nn.MSELoss()
content_criterion = ContentLoss()
adversarial_criterion = nn.BCEWithLogitsLoss()
d_optimizer = torch.optim.Adam(discriminator.parameters(), 1e-4)
g_optimizer = torch.optim.Adam(generator.parameters(), 1e-4)
pixel_weight, content_weight, adversarial_weight = 1.0, 1.0, 0.001

train_dataloader = [(torch.rand(2, 3, 8, 8), torch.rand(2, 3, 16, 16)) for _ in range(2)]


def train_adversarial(train_dataloader, epoch):
    discriminator.train()
    generator.train()
    for index, (lr, hr) in enumerate(train_dataloader):
        real_label = torch.full([lr.size(0), 1], 1.0, dtype=lr.dtype)
        fake_label = torch.full([lr.size(0), 1], 0.0, dtype=lr.dtype)

        # During discriminator training, enable discriminator backpropagation.
        for p in discriminator.parameters():
            p.requires_grad = True
        # Generate super-resolution images.
        with torch.no_grad():
            sr = generator(lr)  # <- no_grad

        discriminator.zero_grad()
        output = discriminator(hr)
        d_loss_hr = adversarial_criterion(output, real_label)
        d_loss_hr.backward()
        output = discriminator(sr.detach())
        d_loss_sr = adversarial_criterion(output, fake_label)
        d_loss_sr.backward()
        d_optimizer.step()

        # During generator training, turn off discriminator backpropagation.
        for p in discriminator.parameters():
            p.requires_grad = False
        generator.zero_grad()
        output = discriminator(sr)
        pixel_loss = pixel_weight * pixel_criterion(sr, hr.detach())
        content_loss = content_weight * content_criterion(sr, hr.detach())
        adversarial_loss = adversarial_weight * adversarial_criterion(output, real_label)
        g_loss = pixel_loss + content_loss + adversarial_loss
        g_loss.backward()
        g_optimizer.step()
        print(f"Epoch {epoch} iter {index}: D loss {(d_loss_hr + d_loss_sr).item():.4f} "
              f"G loss {g_loss.item():.4f}")


train_adversarial(train_dataloader, 0)
print("generator conv1 grad:", generator.conv1[0].weight.grad is not None)
