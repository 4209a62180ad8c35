"""Korean blog post (Tistory) "loss.backward(retain_graph=True)의 필요성 & GAN 학습할때",
https://rlawjdghek.tistory.com/33: training a basic GAN, the author trains the discriminator first and then
the generator on the same generated batch gene_img = generator(latent_z), without making a second latent_z or
a second generator pass. The discriminator loss is computed on gene_img without .detach(), so
d_loss.backward() walks through the generator too and, to save memory, frees that graph; the generator step
that follows reuses gene_img and its backward fails ("Trying to backward through the graph a second time"):
the generator's part of the graph is gone. The post's fix (its option 3): call the discriminator's backward
with retain_graph=True (keeping gene_img undetached) so the graph survives to the generator's backward.
The script raises the RuntimeError."""
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)

latent_dim, img_dim, batch = 8, 16, 16
generator = nn.Sequential(nn.Linear(latent_dim, 32), nn.ReLU(), nn.Linear(32, img_dim), nn.Tanh())
discriminator = nn.Sequential(nn.Linear(img_dim, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1), nn.Sigmoid())
optimizer_G = torch.optim.Adam(generator.parameters(), lr=2e-4)
optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=2e-4)
criterion = nn.BCELoss()
real_data = [torch.rand(batch, img_dim) * 2 - 1 for _ in range(4)]  # stands in for the image loader
real_label = torch.ones(batch, 1)
fake_label = torch.zeros(batch, 1)
g_before = generator[2].weight.detach().clone()
d_before = discriminator[2].weight.detach().clone()

for epoch in range(2):
    for real_img in real_data:
        latent_z = torch.randn(batch, latent_dim)
        gene_img = generator(latent_z)

        # discriminator step
        optimizer_D.zero_grad()
        d_loss = criterion(discriminator(real_img), real_label) + criterion(discriminator(gene_img), fake_label)
        d_loss.backward(retain_graph=True)
        optimizer_D.step()

        # generator step on the same gene_img
        optimizer_G.zero_grad()
        g_loss = criterion(discriminator(gene_img), real_label)
        g_loss.backward()
        optimizer_G.step()

print("generator changed:", not torch.equal(g_before, generator[2].weight))
print("discriminator changed:", not torch.equal(d_before, discriminator[2].weight))
