"""A GAN whose generator step detaches the fake images (nikhilsinghmus/image2reverb#37: "Is
fake_spec.detach() in Generator training step intentional?"), with a discriminator step that does not
detach, as in yunjey/pytorch-tutorial's GAN (issue #56). The generator gets gradients only from the
discriminator's loss, and reset_grad() erases them before every g_optimizer.step()."""
import torch
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 8), nn.Tanh())
D = nn.Sequential(nn.Linear(8, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1), nn.Sigmoid())
criterion = nn.BCELoss()
d_optimizer = torch.optim.Adam(D.parameters(), lr=2e-4)
g_optimizer = torch.optim.Adam(G.parameters(), lr=2e-4)


def reset_grad():
    d_optimizer.zero_grad()
    g_optimizer.zero_grad()


real_labels, fake_labels = torch.ones(16, 1), torch.zeros(16, 1)
for step in range(3):
    images = torch.randn(16, 8)
    fake_images = G(torch.randn(16, 4))
    d_loss = criterion(D(images), real_labels) + criterion(D(fake_images), fake_labels)
    reset_grad()
    d_loss.backward()
    d_optimizer.step()

    fake_images = G(torch.randn(16, 4))
    g_loss = criterion(D(fake_images.detach()), real_labels)  # <- detach
    reset_grad()
    g_loss.backward()
    g_optimizer.step()  # <- symptom
    print(f"step {step}: d_loss {d_loss.item():.4f} g_loss {g_loss.item():.4f}")
