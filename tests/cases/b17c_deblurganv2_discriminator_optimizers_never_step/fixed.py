"""DeblurGANv2-MobileNetv123-PyTorch: the WGAN discriminators are never updated.

Source: https://github.com/zhaoyuzhi/DeblurGANv2-MobileNetv123-PyTorch/issues/7
What the user saw: in Continue_train_WGAN (trainer.py) there is no call to optimizer_D1.step() or
optimizer_D2.step(), so the global and the patch discriminator keep their initial weights; the maintainer
confirmed the bug.
Why: loss_D1.backward() / loss_D2.backward() fill the discriminators' .grad, optimizer_D1/D2.zero_grad()
clears it at the next iteration, and nothing in between ever applies it. Only optimizer_G steps.
Fix: call optimizer_D1.step() after loss_D1.backward() and optimizer_D2.step() after loss_D2.backward().
"""
import random

import torch
import torch.nn as nn

torch.manual_seed(0)
random.seed(0)
crop_size, patch_size = 8, 4

generator = nn.Conv2d(3, 3, 3, padding=1)
global_discriminator = nn.Sequential(nn.Conv2d(3, 4, 4, 2, 1), nn.Flatten(), nn.Linear(64, 1))
patch_discriminator = nn.Sequential(nn.Conv2d(3, 4, 4, 2, 1), nn.Flatten(), nn.Linear(16, 1))
criterion_L1 = nn.L1Loss()

optimizer_G = torch.optim.Adam(generator.parameters(), lr=1e-3)
optimizer_D1 = torch.optim.Adam(global_discriminator.parameters(), lr=1e-3)
optimizer_D2 = torch.optim.Adam(patch_discriminator.parameters(), lr=1e-3)
d1_before = global_discriminator[0].weight.detach().clone()
g_before = generator.weight.detach().clone()

for i in range(4):
    true_input, true_target = torch.randn(2, 3, 8, 8), torch.randn(2, 3, 8, 8)
    # Train Discriminator
    optimizer_D1.zero_grad()
    optimizer_D2.zero_grad()
    fake_target = generator(true_input)
    rand_h = random.randint(0, crop_size - patch_size)
    rand_w = random.randint(0, crop_size - patch_size)
    fake_target_patch = fake_target[:, :, rand_h:rand_h + patch_size, rand_w:rand_w + patch_size]
    true_target_patch = true_target[:, :, rand_h:rand_h + patch_size, rand_w:rand_w + patch_size]
    loss_D1 = -torch.mean(global_discriminator(true_target)) + torch.mean(global_discriminator(fake_target.detach()))
    loss_D1.backward()
    optimizer_D1.step()
    loss_D2 = -torch.mean(patch_discriminator(true_target_patch)) + torch.mean(patch_discriminator(fake_target_patch.detach()))
    loss_D2.backward()
    optimizer_D2.step()
    # Train Generator
    optimizer_G.zero_grad()
    fake_target = generator(true_input)
    fake_target_patch = fake_target[:, :, rand_h:rand_h + patch_size, rand_w:rand_w + patch_size]
    loss = criterion_L1(fake_target, true_target) + 0.01 * (
        -torch.mean(global_discriminator(fake_target)) - torch.mean(patch_discriminator(fake_target_patch)))
    loss.backward()
    optimizer_G.step()
    print(f"iter {i} loss_D1 {loss_D1.item():.4f} loss_G {loss.item():.4f}")

print("generator changed:", not torch.equal(g_before, generator.weight.detach()))
print("global discriminator changed:", not torch.equal(d1_before, global_discriminator[0].weight.detach()))
