"""The fixed twin: an out-of-place addition (NVlabs/VILA#199)."""
import torch
import torch.nn.functional as F
from torch import nn


class VLM(nn.Module):
    def __init__(self, d=16, vocab=30):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.soft_prompt = nn.Parameter(torch.randn(4, d) * 0.02)
        self.vision_tower = nn.Linear(12, d)
        self.lm_head = nn.Linear(d, vocab)

    def forward(self, ids, images):
        text_embeds = self.soft_prompt if ids is None else self.embed_tokens(ids)
        image_embeds = self.vision_tower(images)
        text_embeds = text_embeds + image_embeds.mean() * 0.0
        return self.lm_head(text_embeds)


torch.manual_seed(0)
model = VLM()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
targets = torch.randint(0, 30, (4,))
for step in range(4):
    ids = None if step % 2 == 0 else torch.randint(0, 30, (4,))
    logits = model(ids, torch.randn(2, 12))
    loss = F.cross_entropy(logits, targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
