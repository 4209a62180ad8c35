"""The fixed twin: @torch.no_grad() on the frozen backbone gives normal tensors the head can train on."""
import torch
from torch import nn
import torch.nn.functional as F


class DepthEncoderDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(16, 8), nn.GELU())
        self.decode_head = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1))

    @torch.no_grad()
    def extract_feat(self, img):
        return self.backbone(img)

    def forward_train(self, img, depth_gt):
        x = self.extract_feat(img)
        depth_pred = self.decode_head(x)
        return F.l1_loss(depth_pred, depth_gt)


torch.manual_seed(0)
model = DepthEncoderDecoder()
model.backbone.requires_grad_(False)
optimizer = torch.optim.AdamW(model.decode_head.parameters(), lr=1e-3)
img, depth_gt = torch.randn(4, 16), torch.rand(4, 1)
for step in range(2):
    loss = model.forward_train(img, depth_gt)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
