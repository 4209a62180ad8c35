"""haowang1992/DSN (sketch-based image retrieval), issue #2 "loss_memory.grad is none".
https://github.com/haowang1992/DSN/issues/2

What the user saw: loss_memory has no grad; the memory term is logged and added to
loss_total, yet it changes nothing in training.
Why: train() computes `memory.memory_loss(features[...].detach(), label_i.detach())`:
the query features are detached, so the cosine similarity to the (detached) class
centres carries no gradient; memory_lambda * loss_memory is a constant in loss_total.
Fix: pass the live features as queries: `memory.memory_loss(features[...], label_i)`
(the stored memory entries stay detached).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MemoryStore:
    def __init__(self, n_classes, embed_dim):
        self.sums = torch.zeros(n_classes, embed_dim)
        self.counts = torch.zeros(n_classes)

    def add_entries(self, embeds, labels):
        self.sums.index_add_(0, labels, embeds)
        self.counts.index_add_(0, labels, torch.ones(len(labels)))

    def memory_loss(self, queries, labels):
        centers = self.sums[labels] / self.counts[labels].clamp_min(1).unsqueeze(1)
        return F.cosine_similarity(queries, centers).mean()


torch.manual_seed(0)
backbone = nn.Linear(16, 8)
classifier = nn.Linear(8, 4)
memory = MemoryStore(n_classes=4, embed_dim=8)
optimizer = torch.optim.SGD(list(backbone.parameters()) + list(classifier.parameters()), lr=0.1)
sketch, image = torch.randn(12, 16), torch.randn(12, 16)
label_s, label_i = torch.arange(12) % 4, torch.arange(12) % 4
for step in range(4):
    features = backbone(torch.cat([sketch, image]))
    output = classifier(features)
    memory.add_entries(features[:12].detach(), label_s)
    loss_memory = 1.0 - memory.memory_loss(features[12:], label_i)
    loss = F.cross_entropy(output, torch.cat([label_s, label_i]))
    optimizer.zero_grad()
    loss_total = loss + 1.0 * loss_memory
    loss_total.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f} loss_memory {loss_memory.item():.4f} "
          f"loss_memory.requires_grad={loss_memory.requires_grad}")
