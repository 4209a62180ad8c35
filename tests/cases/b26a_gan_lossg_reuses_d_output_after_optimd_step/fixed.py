"""CSDN post "GAN训练中的inplace问题(pytorch)", https://blog.csdn.net/odbej/article/details/125158288: training a
GAN, the author got "RuntimeError: one of the variables needed for gradient computation has been modified by an
inplace operation". The discriminator step runs first: lossD.backward(retain_graph=True) keeps the graph of
g = G(t) and d = D(g), optimD.step() then updates D's weights in place, and lossG is computed from the old d.
lossG.backward() walks back through D(g), whose saved weights are now at a newer version, so autograd refuses.
The post names optimizer.step() as the in-place operation and says lossG needs a rebuilt graph through the
updated D. Fix: compute lossG from a fresh D(g) after optimD.step(); this fixed twin does, and both nets train."""
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)

G = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16))
D = nn.Sequential(nn.Linear(16, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1), nn.Sigmoid())
optimG = torch.optim.Adam(G.parameters(), lr=1e-3)
optimD = torch.optim.Adam(D.parameters(), lr=1e-3)
criterion = nn.BCELoss()
real_data = [torch.randn(16, 16) * 0.5 + 1.0 for _ in range(4)]  # stands in for the real data loader
ones, zeros = torch.ones(16, 1), torch.zeros(16, 1)
G_before = G[2].weight.detach().clone()
D_before = D[2].weight.detach().clone()

for epoch in range(2):
    for x in real_data:
        t = torch.randn(16, 8)
        g = G(t)
        d = D(g)
        lossD = criterion(D(x), ones) + criterion(d, zeros)
        optimD.zero_grad()
        lossD.backward(retain_graph=True)
        optimD.step()
        lossG = criterion(D(g), ones)
        optimG.zero_grad()
        lossG.backward()
        optimG.step()

print("G changed:", not torch.equal(G_before, G[2].weight))
print("D changed:", not torch.equal(D_before, D[2].weight))
