"""A learning-rate scheduler added to SfmLearner (ClementPinard/SfmLearner-Pytorch#5): with --scheduler the loop
calls scheduler.step() instead of optimizer.step(), so gradients are computed and the weights never change."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
disp_net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 1, 3, padding=1))
optimizer = torch.optim.Adam(disp_net.parameters(), lr=2e-4)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10, gamma=0.5)
tgt_img, ref_img = torch.randn(2, 3, 8, 8), torch.randn(2, 1, 8, 8)
before = disp_net[0].weight.clone()
for i in range(15):
    loss = F.l1_loss(disp_net(tgt_img), ref_img)
    optimizer.zero_grad()
    loss.backward()
    if scheduler:
        scheduler.step()  # <- no_update
    else:
        optimizer.step()
print("weights changed:", not torch.equal(before, disp_net[0].weight), "loss", round(loss.item(), 4))
