"""The fixed twin of cdpn_coordinates_from_argmax (https://github.com/LZGMatrix/BOP19_CDPN_2019ICCV/issues/4)."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
coor_bin = 8
head = nn.Conv2d(4, 3 * (coor_bin + 1), 1)
optimizer = torch.optim.Adam(head.parameters(), lr=1e-3)
feats, gt_coor = torch.randn(1, 4, 6, 6), torch.rand(6, 6, 3) * 2 - 1
for step in range(3):
    out = head(feats).view(3, coor_bin + 1, 6, 6)
    output_coor_ = torch.stack([(out[i].softmax(0) * torch.arange(coor_bin + 1.0)[:, None, None]).sum(0) for i in range(3)], 2)
    output_coor_ = 2.0 * output_coor_.float() / (coor_bin - 1) - 1.0
    loss = F.l1_loss(output_coor_, gt_coor)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
