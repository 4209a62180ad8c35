"""velog.io/@rhss10, "where should optimizer.zero_grad() go?": zero_grad() may sit at the start or at the end of the
loop, but never between loss.backward() and optimizer.step(), because it clears the gradients backward() just
computed. Here a small transformer classifier with a warmup scheduler calls it in that place: every step() finds no
gradient (set_to_none) and no weight ever changes, though the loss and the learning rate print normally. The fix:
move zero_grad() after step() (or before the forward pass)."""
import torch
import torch.nn.functional as F
from torch import nn


class TextClassifier(nn.Module):
    def __init__(self, vocab=100, dim=32, classes=3):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.encoder = nn.TransformerEncoderLayer(dim, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True)
        self.head = nn.Linear(dim, classes)

    def forward(self, ids):
        return self.head(self.encoder(self.emb(ids)).mean(dim=1))


torch.manual_seed(0)
model = TextClassifier()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / 2))
train_batch = [(torch.randint(0, 100, (8, 12)), torch.randint(0, 3, (8,))) for _ in range(3)]
head_before = model.head.weight.detach().clone()
for ids, labels in train_batch:
    loss = F.cross_entropy(model(ids), labels)
    loss.backward()
    optimizer.zero_grad()  # <- optimizer
    optimizer.step()
    scheduler.step()
    print(f"loss {loss.item():.4f} lr {scheduler.get_last_lr()[0]:.5f}")
print("head weight changed:", not torch.equal(model.head.weight, head_before))
