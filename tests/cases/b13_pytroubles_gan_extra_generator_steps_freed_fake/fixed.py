"""pytroubles.com (ru/posts/id2658, "GAN in PyTorch: fixing the backward error with detach"): the generator is updated n times
per discriminator step; the discriminator step then scores the last `fake_batch` the generator loop made, whose graph
through netG the generator's `g_loss.backward()` already freed, so `d_loss.backward()` raises "Trying to backward
through the graph a second time". The fix: feed the discriminator `fake_batch.detach()`."""
import torch
from torch import nn

torch.manual_seed(0)
latent_dim, g_update_factor, d_update_factor = 8, 2, 1
netG = nn.Sequential(nn.Linear(latent_dim, 32), nn.ReLU(), nn.Linear(32, 784), nn.Tanh())
netD = nn.Sequential(nn.Linear(784, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
optG = torch.optim.Adam(netG.parameters(), lr=2e-4)
optD = torch.optim.Adam(netD.parameters(), lr=2e-4)
bce_loss = nn.BCEWithLogitsLoss()
data_stream = [(torch.rand(16, 1, 28, 28) * 2 - 1, None) for _ in range(2)]

for epoch in range(1):
    for batch_id, (real_batch, _) in enumerate(data_stream):
        real_batch = real_batch.view(-1, 784)
        bsz = real_batch.shape[0]
        for _ in range(g_update_factor):
            z = torch.randn(bsz, latent_dim)
            fake_batch = netG(z)
            gen_scores = netD(fake_batch).view(-1)
            g_loss = bce_loss(gen_scores, torch.ones_like(gen_scores))
            g_loss.backward()
            optG.step()
            netG.zero_grad()
        for _ in range(d_update_factor):
            netD.zero_grad()
            real_scores = netD(real_batch).view(-1)
            fake_scores = netD(fake_batch.detach()).view(-1)
            d_loss = (bce_loss(real_scores, torch.ones_like(real_scores))
                      + bce_loss(fake_scores, torch.zeros_like(fake_scores)))
            d_loss.backward()
            optD.step()
        print(f"batch {batch_id}: g_loss {g_loss.item():.4f} d_loss {d_loss.item():.4f}")
for net, opt in ((netG, optG), (netD, optD)):
    before = [p.detach().clone() for p in net.parameters()]
    opt.zero_grad()
    z = torch.randn(16, latent_dim)
    scores = netD(netG(z)).view(-1)
    (bce_loss(scores, torch.ones_like(scores)) if net is netG else bce_loss(scores, torch.zeros_like(scores))).backward()
    opt.step()
    for (name, p), b in zip(net.named_parameters(), before):
        assert p.grad is not None and not torch.equal(p, b), name
netD.zero_grad()
print("every parameter of netG and netD got a gradient and changed")
