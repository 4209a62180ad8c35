"""The fixed twin: the pre-trained table is loaded with freeze=False (RUCAIBox/RecBole#2027)."""
import torch
import torch.nn.functional as F
from torch import nn


class DummyModel(nn.Module):
    def __init__(self, pretrained):
        super().__init__()
        self.item_embedding = nn.Embedding.from_pretrained(pretrained, freeze=False)

    def forward(self, history, items):
        user = self.item_embedding(history).mean(1)
        return (user[:, None, :] * self.item_embedding(items)).sum(-1)


torch.manual_seed(0)
model = DummyModel(torch.randn(50, 8))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
history = torch.randint(0, 50, (16, 5))
pos, neg = torch.randint(0, 50, (16, 1)), torch.randint(0, 50, (16, 1))
for epoch in range(3):
    scores = model(history, torch.cat([pos, neg], 1))
    loss = -F.logsigmoid(scores[:, 0] - scores[:, 1]).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch}: BPR loss {loss.item():.4f}")
