"""SR-TOD (Hiyuur/SR-TOD#5, https://github.com/Hiyuur/SR-TOD/issues/5): the detector reconstructs the image,
takes the difference map between reconstruction and input, and binarises it with a learnable threshold:
`difference_map_mask = (torch.sign(difference_map - learnable_thresh) + 1) * 0.5`. torch.sign has a zero gradient
everywhere, so `learnable_thresh`, declared as an nn.Parameter, gets an all-zero gradient and never moves; the author
confirmed the binarisation blocks the gradient (torch.where warned the same way). Fix: a differentiable relaxation
of the step, e.g. a steep sigmoid of (difference_map - learnable_thresh)."""
import torch
import torch.nn.functional as F
from torch import nn


class DifferenceMapEnhancer(nn.Module):
    """Reconstruction head + difference-map guided feature enhancement (the SRTOD neck)."""

    def __init__(self, channels=8, init_thresh=0.0156862):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, channels, 3, padding=1), nn.ReLU())
        self.rec_head = nn.Conv2d(channels, 3, 3, padding=1)
        self.learnable_thresh = nn.Parameter(torch.tensor(init_thresh))
        self.det_head = nn.Conv2d(channels, 1, 1)

    def forward(self, img):
        feat = self.backbone(img)
        rec_img = torch.sigmoid(self.rec_head(feat))
        difference_map = (rec_img - img).abs().mean(dim=1, keepdim=True)
        difference_map_mask = torch.sigmoid((difference_map - self.learnable_thresh) * 200.0)
        feat = feat * (1 + difference_map_mask)
        return self.det_head(feat), rec_img


torch.manual_seed(0)
model = DifferenceMapEnhancer()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
img = torch.rand(2, 3, 12, 12)
target = (torch.rand(2, 1, 12, 12) > 0.9).float()
thresh_before = model.learnable_thresh.item()
for it in range(5):
    optimizer.zero_grad()
    heat, rec = model(img)
    loss = F.binary_cross_entropy_with_logits(heat, target) + F.l1_loss(rec, img)
    loss.backward()
    optimizer.step()
print("learnable_thresh grad:", model.learnable_thresh.grad.item())
print(f"learnable_thresh {thresh_before:.6f} -> {model.learnable_thresh.item():.6f}")
