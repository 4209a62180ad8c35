"""dreamgonfly/GAN-tutorial issue #1, "Train Backward 과정에서 오류" (an error in the backward step of training),
https://github.com/dreamgonfly/GAN-tutorial/issues/1: the tutorial's GAN.ipynb (an MLP GAN on MNIST) fails at
D_loss.backward() with "one of the variables needed for gradient computation has been modified by an inplace operation".
The Discriminator stacks nn.LeakyReLU(0.2, inplace=True) followed by nn.Dropout(inplace=True): LeakyReLU applied in place
saves its own output for backward, and the in-place Dropout then overwrites that output (masking and rescaling it), so the
saved tensor is at a newer version when backward reaches the LeakyReLU. The answer in the thread: remove inplace=True
from every LeakyReLU and Dropout in the Generator and Discriminator classes.
Random tensors stand in for the MNIST loader. This fixed twin applies the answer; both networks train."""
import torch
import torch.nn as nn
from torch.optim import Adam

torch.manual_seed(0)
torch.set_num_threads(1)


class Generator(nn.Module):
    def __init__(self):
        super(Generator, self).__init__()
        self.main = nn.Sequential(
            nn.Linear(in_features=100, out_features=256),
            nn.LeakyReLU(0.2),
            nn.Linear(in_features=256, out_features=512),
            nn.LeakyReLU(0.2),
            nn.Linear(in_features=512, out_features=1024),
            nn.LeakyReLU(0.2),
            nn.Linear(in_features=1024, out_features=28 * 28),
            nn.Tanh())

    def forward(self, inputs):
        return self.main(inputs).view(-1, 1, 28, 28)


class Discriminator(nn.Module):
    def __init__(self):
        super(Discriminator, self).__init__()
        self.main = nn.Sequential(
            nn.Linear(in_features=28 * 28, out_features=1024),
            nn.LeakyReLU(0.2),
            nn.Dropout(),
            nn.Linear(in_features=1024, out_features=512),
            nn.LeakyReLU(0.2),
            nn.Dropout(),
            nn.Linear(in_features=512, out_features=256),
            nn.LeakyReLU(0.2),
            nn.Dropout(),
            nn.Linear(in_features=256, out_features=1),
            nn.Sigmoid())

    def forward(self, inputs):
        inputs = inputs.view(-1, 28 * 28)
        return self.main(inputs)


G = Generator()
D = Discriminator()
criterion = nn.BCELoss()
G_optimizer = Adam(G.parameters(), lr=0.0002, betas=(0.5, 0.999))
D_optimizer = Adam(D.parameters(), lr=0.0002, betas=(0.5, 0.999))
dataloader = [(torch.rand(60, 1, 28, 28) * 2 - 1, None) for _ in range(2)]  # stands in for MNIST, batch_size=60
g_before = G.main[6].weight.detach().clone()
d_before = D.main[9].weight.detach().clone()

for epoch in range(2):
    D_losses, G_losses = [], []
    for real_data, _ in dataloader:
        batch_size = real_data.size(0)
        target_real = torch.ones(batch_size, 1)
        target_fake = torch.zeros(batch_size, 1)

        # train the discriminator
        D_result_from_real = D(real_data)
        D_loss_real = criterion(D_result_from_real, target_real)
        z = torch.randn((batch_size, 100))
        fake_data = G(z)
        D_result_from_fake = D(fake_data)
        D_loss_fake = criterion(D_result_from_fake, target_fake)
        D_loss = D_loss_real + D_loss_fake
        D.zero_grad()
        D_loss.backward()
        D_optimizer.step()
        D_losses.append(D_loss.item())

        # train the generator
        z = torch.randn((batch_size, 100))
        fake_data = G(z)
        D_result_from_fake = D(fake_data)
        G_loss = criterion(D_result_from_fake, target_real)
        G.zero_grad()
        G_loss.backward()
        G_optimizer.step()
        G_losses.append(G_loss.item())
    print("Epoch: {:<3d} D Loss: {:<.6} G Loss: {:<.6}".format(
        epoch, sum(D_losses) / len(D_losses), sum(G_losses) / len(G_losses)))

print("generator changed:", not torch.equal(g_before, G.main[6].weight))
print("discriminator changed:", not torch.equal(d_before, D.main[9].weight))
