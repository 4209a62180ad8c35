"""Fine-tuning a DPT depth head on a frozen DINOv2 backbone (facebookresearch/dinov2#399, #472): the
feature extraction is decorated with @torch.inference_mode(), so its outputs are inference tensors and
the head's forward raises "Inference tensors cannot be saved for backward"."""
import torch
from torch import nn
import torch.nn.functional as F


class DepthEncoderDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(16, 8), nn.GELU())
        self.decode_head = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1))

    @torch.inference_mode()
    def extract_feat(self, img):
        return self.backbone(img)  # <- no_grad

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
