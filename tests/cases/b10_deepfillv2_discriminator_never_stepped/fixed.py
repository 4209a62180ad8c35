"""The fixed twin: optimizer_d.step() follows loss_D.backward() (zhaoyuzhi/deepfillv2#6)."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
generator = nn.Sequential(nn.Conv2d(4, 16, 3, padding=1), nn.ELU(), nn.Conv2d(16, 3, 3, padding=1), nn.Tanh())
discriminator = nn.Sequential(nn.Conv2d(4, 16, 4, stride=2, padding=1), nn.LeakyReLU(0.2),
                              nn.Conv2d(16, 1, 4, stride=2, padding=1))
optimizer_g = torch.optim.Adam(generator.parameters(), lr=1e-3, betas=(0.5, 0.999))
optimizer_d = torch.optim.Adam(discriminator.parameters(), lr=1e-3, betas=(0.5, 0.999))
img = torch.rand(4, 3, 16, 16) * 2 - 1
mask = (torch.rand(4, 1, 16, 16) > 0.7).float()
d_before = [p.detach().clone() for p in discriminator.parameters()]
for batch_idx in range(8):
    first_out = generator(torch.cat([img * (1 - mask), mask], 1))
    first_out_wholeimg = img * (1 - mask) + first_out * mask
    # Train Discriminator
    optimizer_d.zero_grad()
    fake_scalar = discriminator(torch.cat([first_out_wholeimg.detach(), mask], 1))
    true_scalar = discriminator(torch.cat([img, mask], 1))
    loss_D = F.relu(1 - true_scalar).mean() + F.relu(1 + fake_scalar).mean()
    loss_D.backward()
    optimizer_d.step()
    # Train Generator
    optimizer_g.zero_grad()
    gan_loss = -discriminator(torch.cat([first_out_wholeimg, mask], 1)).mean()
    loss = (first_out - img).abs().mean() + 0.1 * gan_loss
    loss.backward()
    optimizer_g.step()
changed = any(not torch.equal(p, p0) for p, p0 in zip(discriminator.parameters(), d_before))
print(f"loss_D {loss_D.item():.4f}; discriminator has grads: {discriminator[0].weight.grad is not None}; "
      f"discriminator changed: {changed}")
