# Shape of AliLotfi92/InfoMaxVAE MNIST/Save_Info_VAE_Linear.py (issue #1): the VAE loss is
# backpropagated with retain_graph=True and optim_VAE.step() updates the VAE weights in place;
# the discriminator's info loss is then backpropagated through the same graph, which still
# needs the old encoder weights -> "modified by an inplace operation".
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

torch.manual_seed(0)
X_DIM, H, z_dim, batch_size, gamma = 64, 32, 2, 16, 10


class Discriminator(nn.Module):
    def __init__(self, z_dim=2):
        super(Discriminator, self).__init__()
        self.net = nn.Sequential(
            nn.Linear(X_DIM + z_dim, H), nn.ReLU(True),
            nn.Linear(H, 16), nn.ReLU(True),
            nn.Linear(16, 1),
        )

    def forward(self, x, z):
        x = x.view(-1, X_DIM)
        x = torch.cat((x, z), 1)
        return self.net(x).squeeze()


class VAE1(nn.Module):
    def __init__(self, z_dim=2):
        super(VAE1, self).__init__()
        self.z_dim = z_dim
        self.encode = nn.Sequential(
            nn.Linear(X_DIM, H), nn.ReLU(True),
            nn.Linear(H, H), nn.ReLU(True),
            nn.Linear(H, 2 * z_dim),
        )
        self.decode = nn.Sequential(
            nn.Linear(z_dim, H), nn.ReLU(True),
            nn.Linear(H, X_DIM), nn.Sigmoid(),
        )

    def reparametrize(self, mu, logvar):
        std = logvar.mul(0.5).exp_()
        eps = std.data.new(std.size()).normal_()
        return eps.mul(std).add_(mu)

    def forward(self, x):
        stats = self.encode(x.view(-1, X_DIM))
        mu = stats[:, :self.z_dim]
        logvar = stats[:, self.z_dim:]
        z = self.reparametrize(mu, logvar)
        x_recon = self.decode(z).view(x.size())
        return x_recon, mu, logvar, z.squeeze()


def recon_loss(x_recon, x):
    return F.binary_cross_entropy(x_recon, x, reduction='sum').div(x.size(0))


def kl_divergence(mu, logvar):
    return -0.5 * (1 + logvar - mu ** 2 - logvar.exp()).sum(1).mean()


def permute_dims(z):
    perm = torch.randperm(z.size(0))
    return z[perm]


VAE = VAE1(z_dim)
D = Discriminator(z_dim)
optim_VAE = optim.Adam(VAE.parameters(), lr=1e-4, betas=(0.9, 0.999))
optim_D = optim.Adam(D.parameters(), lr=1e-5, betas=(0.9, 0.999))
data = [torch.rand(batch_size, X_DIM) for _ in range(3)]

for batch_idx, x_true in enumerate(data):
    x_recon, mu, logvar, z = VAE(x_true)

    D_xz = D(x_true, z)
    z_perm = permute_dims(z)
    D_x_z = D(x_true, z_perm)
    Info_xz = -(D_xz.mean() - (torch.exp(D_x_z - 1).mean()))

    vae_loss = recon_loss(x_recon, x_true) + kl_divergence(mu, logvar) + gamma * Info_xz

    optim_VAE.zero_grad()
    vae_loss.backward(retain_graph=True)
    optim_VAE.step()

    info_loss = Info_xz
    optim_D.zero_grad()
    info_loss.backward()  # <- inplace_saved
    optim_D.step()
    print(batch_idx, 'vae_loss', round(vae_loss.item(), 4), 'D grad norm',
          round(D.net[0].weight.grad.norm().item(), 6))
