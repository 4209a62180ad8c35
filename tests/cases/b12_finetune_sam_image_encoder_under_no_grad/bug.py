"""Fine-tuning SAM without prompts (mazurowski-lab/finetune-SAM#5): with `args.if_update_encoder` set, the image
encoder's parameters are unfrozen and put in the optimizer, yet "it seems that it has no effect whether I set
args.if_update_encoder to True or False? Always only the mask decoder parameters are updated". The training loop still
computes the image embedding inside `with torch.no_grad():`; the author: "When you need to update image encoder, you
need to remove 'with torch.no_grad():'"."""
import torch
import torch.nn.functional as F
from torch import nn


class Sam(nn.Module):
    def __init__(self):
        super().__init__()
        self.image_encoder = nn.Sequential(nn.Conv2d(3, 16, 4, stride=4), nn.GELU(), nn.Conv2d(16, 16, 1))
        self.no_mask_embed = nn.Embedding(1, 16)
        self.mask_decoder = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.GELU(), nn.ConvTranspose2d(16, 1, 4, 4))

    def prompt_encoder(self, points=None, boxes=None, masks=None):
        dense = self.no_mask_embed.weight.reshape(1, -1, 1, 1)
        return None, dense


torch.manual_seed(0)
if_update_encoder = True
sam = Sam()
sam.no_mask_embed.requires_grad_(False)
params = list(sam.mask_decoder.parameters())
if if_update_encoder:
    params += list(sam.image_encoder.parameters())
optimizer = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.1)
trainloader = [(torch.rand(2, 3, 32, 32), (torch.rand(2, 1, 32, 32) > 0.5).float()) for _ in range(2)]
for i, (imgs, msks) in enumerate(trainloader):
    with torch.no_grad():
        img_emb = sam.image_encoder(imgs)  # <- no_grad
    sparse_emb, dense_emb = sam.prompt_encoder(points=None, boxes=None, masks=None)
    pred = sam.mask_decoder(img_emb + dense_emb)
    loss = F.binary_cross_entropy_with_logits(pred, msks)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"image encoder grad: {sam.image_encoder[0].weight.grad}")
