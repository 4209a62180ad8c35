"""TopoLoss (HuXiaoling/TopoLoss#8): the topology loss finds its critical pixels in NumPy on a
likelihood.clone().detach() copy and then computes the loss from that copy as well, so the topology term carries
no gradient; only the BCE term trains the segmentation net (the maintainer: remove the clone and detach)."""
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def critical_pixels(lh):
    """Indices of the pixels whose values decide the persistence pairs (here: the 16 most ambiguous ones, to be filled)."""
    return np.argsort(np.abs(lh.reshape(-1) - 0.5))[:16]


def topo_loss(likelihood):
    lh = likelihood.clone().detach()  # <- cut_term
    idx = torch.from_numpy(critical_pixels(lh.numpy()))
    return ((lh.flatten()[idx] - 1.0) ** 2).sum()


torch.manual_seed(0)
net = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 1, 3, padding=1))
optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
img = torch.randn(1, 1, 16, 16)
gt = (img > 0.3).float()
for step in range(60):
    likelihood = torch.sigmoid(net(img))
    topo = topo_loss(likelihood[0, 0])
    loss = F.binary_cross_entropy(likelihood, gt) + 0.5 * topo
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 20 == 0 or step == 59:
        print(f"step {step}: topo loss {topo.item():.4f}")
