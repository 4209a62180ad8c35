"""The fixed twin: the optimizer also gets the classification head (huggingface/pytorch-openai-transformer-lm#6)."""
import torch
import torch.nn.functional as F
from torch import nn


class TransformerModel(nn.Module):
    def __init__(self, vocab=50, n_embd=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, n_embd)
        self.block = nn.TransformerEncoderLayer(n_embd, 2, 32, dropout=0.0, batch_first=True)

    def forward(self, ids):
        return self.block(self.embed(ids))


class ClfHead(nn.Module):
    def __init__(self, n_embd=16, n_class=3):
        super().__init__()
        self.clf = nn.Linear(n_embd, n_class)

    def forward(self, h):
        return self.clf(h[:, -1])


torch.manual_seed(0)
model, clf_head = TransformerModel(), ClfHead()
optimizer = torch.optim.Adam([*model.parameters(), *clf_head.parameters()], lr=1e-3)
ids, y = torch.randint(0, 50, (16, 7)), torch.randint(0, 3, (16,))
before = clf_head.clf.weight.detach().clone()
for step in range(10):
    loss = F.cross_entropy(clf_head(model(ids)), y)
    optimizer.zero_grad()
    clf_head.zero_grad()
    loss.backward()
    optimizer.step()
print("clf head has grad:", clf_head.clf.weight.grad is not None, "moved:", not torch.equal(before, clf_head.clf.weight))
