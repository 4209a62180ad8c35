"""The fixed twin: the contrastive loss is written in torch on the live hidden state, so it trains the
encoder too."""
import numpy as np
import torch
from torch import nn
import torch.nn.functional as F


def contrastive_loss(temp, embedding, label):
    embedding = embedding / embedding.norm(dim=1, keepdim=True)
    sim = torch.exp(embedding @ embedding.T / temp)
    same = (label[:, None] == label[None, :]).float() - torch.eye(len(label))
    denom = sim.sum(dim=1) - torch.diag(sim)
    loss = -(same * torch.log(sim / denom[:, None])).sum(dim=1) / same.sum(dim=1).clamp(min=1)
    return loss.mean()


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(12, 16), nn.Tanh())
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        hiden_state = self.encoder(x)
        return hiden_state, self.head(hiden_state)


torch.manual_seed(0)
model = Classifier()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
b_input, b_labels = torch.randn(16, 12), torch.randint(0, 3, (16,))
lam, tem = 0.9, 0.3
for step in range(3):
    hiden_state, logits = model(b_input)
    cross_loss = F.cross_entropy(logits, b_labels)
    contrastive_l = contrastive_loss(tem, hiden_state, b_labels)
    loss = (lam * contrastive_l) + (1 - lam) * (cross_loss)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f} contrastive {float(contrastive_l):.4f}")
