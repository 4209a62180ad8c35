"""The fixed twin: an MSE term between `iou_pred` and the masks' actual IoU trains the IoU head, as SAM does
(mit-han-lab/efficientvit#124)."""
import torch
import torch.nn.functional as F
from torch import nn


class MaskDecoder(nn.Module):
    def __init__(self, dim=16, num_masks=3):
        super().__init__()
        self.mask_tokens = nn.Embedding(num_masks, dim)
        self.upscale = nn.Sequential(nn.ConvTranspose2d(dim, dim, 4, 4), nn.GELU())
        self.iou_prediction_head = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, num_masks))

    def forward(self, image_embedding):
        tokens = self.mask_tokens.weight + image_embedding.mean((2, 3))[:, None]
        masks = torch.einsum("bnc,bchw->bnhw", tokens, self.upscale(image_embedding))
        iou_pred = self.iou_prediction_head(tokens[:, 0])
        return masks, iou_pred


def mask_iou(pred_logits, gt):
    pred = (pred_logits > 0).float()
    return (pred * gt).sum((-2, -1)) / ((pred + gt).clamp(max=1).sum((-2, -1)) + 1e-6)


torch.manual_seed(0)
image_encoder, decoder = nn.Conv2d(3, 16, 4, stride=4), MaskDecoder()
optimizer = torch.optim.AdamW(list(image_encoder.parameters()) + list(decoder.parameters()), lr=1e-3)
images, gt_masks = torch.rand(2, 3, 32, 32), (torch.rand(2, 1, 32, 32) > 0.5).float()
for step in range(3):
    masks, iou_pred = decoder(image_encoder(images))
    loss_focal = F.binary_cross_entropy_with_logits(masks, gt_masks.expand_as(masks))
    probs = masks.sigmoid()
    loss_dice = 1 - (2 * (probs * gt_masks).sum((-2, -1)) + 1) / (probs.sum((-2, -1)) + gt_masks.sum((-2, -1)) + 1)
    loss_iou = F.mse_loss(iou_pred, mask_iou(masks.detach(), gt_masks))
    loss = 20 * loss_focal + loss_dice.mean() + loss_iou
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"iou head grad set: {decoder.iou_prediction_head[0].weight.grad is not None}")
