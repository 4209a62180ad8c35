"""Bunny continuous fine-tuning with the vision tower unfrozen (BAAI-DCAI/Bunny#130): the vision tower is put in the
optimizer, yet its weights never change. SiglipVisionTower.forward is decorated with `@torch.no_grad()` (written for
a frozen tower), so the image features carry no graph back to the tower; only the projector and the language model
learn. The fix removes the decorator."""
import torch
import torch.nn.functional as F
from torch import nn


class TinySiglipVisionModel(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, 8, stride=8)
        self.layers = nn.ModuleList(nn.TransformerEncoderLayer(dim, 4, 64, batch_first=True) for _ in range(2))

    def forward(self, images, output_hidden_states=True):
        x = self.patch(images).flatten(2).transpose(1, 2)
        hidden_states = [x]
        for layer in self.layers:
            x = layer(x)
            hidden_states.append(x)
        hidden_states.append(F.layer_norm(x, x.shape[-1:]))
        return hidden_states


class SiglipVisionTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.vision_tower, self.select_layer = TinySiglipVisionModel(), -2

    def forward(self, images):
        image_forward_outs = self.vision_tower(images, output_hidden_states=True)
        return image_forward_outs[self.select_layer]


torch.manual_seed(0)
vision_tower = SiglipVisionTower().train()
mm_projector = nn.Sequential(nn.Linear(32, 48), nn.GELU(), nn.Linear(48, 48))
lm = nn.ModuleDict({"embed": nn.Embedding(100, 48), "head": nn.Linear(48, 100)})
vision_tower.requires_grad_(True)  # unfreeze_vision_tower for continuous fine-tuning
params = list(vision_tower.parameters()) + list(mm_projector.parameters()) + list(lm.parameters())
optimizer = torch.optim.AdamW(params, lr=2e-5)
before = [p.detach().clone() for p in params]
images, input_ids = torch.randn(2, 3, 32, 32), torch.randint(0, 100, (2, 9))
image_features = mm_projector(vision_tower(images))
hidden = lm["embed"](input_ids[:, :-1]) + image_features.mean(dim=1, keepdim=True)
logits = lm["head"](torch.tanh(hidden))
loss = F.cross_entropy(logits.reshape(-1, 100), input_ids[:, 1:].reshape(-1))
optimizer.zero_grad()
loss.backward()
optimizer.step()
print("every trained tensor got a grad and changed:",
      all(p.grad is not None and not torch.equal(b, p) for b, p in zip(before, params)))
