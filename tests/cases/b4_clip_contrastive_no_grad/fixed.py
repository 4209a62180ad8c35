"""The fixed twin: the decode and the CLIP encoding run with gradients, so the contrastive term trains
the transformer (CLIP stays frozen by requires_grad_(False))."""
import torch
from torch import nn
import torch.nn.functional as F

torch.manual_seed(0)
transformer = nn.Linear(8, 16)
codebook = torch.randn(16, 4)
clip_image = nn.Linear(4, 6)
clip_image.requires_grad_(False)
optimizer = torch.optim.Adam(transformer.parameters(), lr=1e-3)
cond, target_idx = torch.randn(5, 8), torch.randint(0, 16, (5,))
psed_emb = F.normalize(torch.randn(5, 6), dim=-1)
for step in range(3):
    logits = transformer(cond)
    nll = F.cross_entropy(logits, target_idx)
    x_sample_nopix = logits.softmax(dim=-1) @ codebook
    gen_img_emb = clip_image(x_sample_nopix)
    gen_img_emb = gen_img_emb / gen_img_emb.norm(dim=-1, keepdim=True)
    sim = torch.cosine_similarity(gen_img_emb.unsqueeze(1), psed_emb.unsqueeze(0), dim=-1)
    contrastive = F.cross_entropy(sim / 0.07, torch.arange(5))
    loss = nll + contrastive
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: nll {nll.item():.4f} contrastive {contrastive.item():.4f}")
