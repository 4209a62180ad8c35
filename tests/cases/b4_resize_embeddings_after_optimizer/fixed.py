"""The fixed twin: the embeddings are resized before the optimizer is built, as the PR does."""
import torch
from torch import nn
import torch.nn.functional as F


class TinyLM(nn.Module):
    def __init__(self, vocab=10, dim=8):
        super().__init__()
        self.embeddings = nn.Embedding(vocab, dim)
        self.lm_head = nn.Linear(dim, vocab)

    def resize_token_embeddings(self, new_num_tokens):
        old = self.embeddings
        new = nn.Embedding(new_num_tokens, old.embedding_dim)
        with torch.no_grad():
            new.weight[: old.num_embeddings] = old.weight
        self.embeddings = new

    def forward(self, ids):
        return self.lm_head(self.embeddings(ids))


torch.manual_seed(0)
model = TinyLM()
model.resize_token_embeddings(12)
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-2)
inputs, labels = torch.tensor([[10, 11, 3, 4]]), torch.tensor([[9, 3, 4, 5]])
before = model.embeddings.weight.detach().clone()
for step in range(3):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(inputs).view(-1, 10), labels.view(-1))
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
print("new token rows changed:", not torch.equal(before[10:], model.embeddings.weight[10:]))
