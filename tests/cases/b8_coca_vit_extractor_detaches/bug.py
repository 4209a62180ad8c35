"""CoCa with vit-pytorch's Extractor (lucidrains/CoCa-pytorch#6): the extractor returns a detached clone of the
ViT's embeddings, so the contrastive and caption losses never reach the image encoder and its .grad stays None."""
import torch
import torch.nn.functional as F
from torch import nn


class Extractor(nn.Module):
    def __init__(self, vit):
        super().__init__()
        self.vit = vit

    def forward(self, img):
        embeddings = self.vit(img)
        return embeddings.clone().detach()  # <- detach


torch.manual_seed(0)
vit = nn.Sequential(nn.Linear(12, 16), nn.GELU(), nn.Linear(16, 16))
image_encoder = Extractor(vit)
text_encoder = nn.Embedding(20, 16)
params = [*vit.parameters(), *text_encoder.parameters()]
optimizer = torch.optim.Adam(params, lr=1e-2)
images, texts = torch.randn(8, 12), torch.randint(0, 20, (8,))
for step in range(10):
    image_latents = F.normalize(image_encoder(images), dim=-1)
    text_latents = F.normalize(text_encoder(texts), dim=-1)
    sim = text_latents @ image_latents.t() / 0.1
    labels = torch.arange(8)
    loss = (F.cross_entropy(sim, labels) + F.cross_entropy(sim.t(), labels)) / 2
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("image encoder grad:", vit[0].weight.grad, "loss", round(loss.item(), 4))
