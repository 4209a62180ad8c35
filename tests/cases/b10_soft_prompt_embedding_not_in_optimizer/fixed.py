"""The fixed twin: after the embedding is wrapped, the optimizer is built on the learned prompt (kipgparker/soft-prompt-tuning#4)."""
import torch
import torch.nn.functional as F
from torch import nn


class SoftEmbedding(nn.Module):
    def __init__(self, wte, n_tokens=4):
        super().__init__()
        self.wte = wte
        self.n_tokens = n_tokens
        self.learned_embedding = nn.Parameter(wte.weight[:n_tokens].detach().clone())

    def forward(self, tokens):
        input_embedding = self.wte(tokens[:, self.n_tokens:])
        learned = self.learned_embedding.unsqueeze(0).expand(tokens.size(0), -1, -1)
        return torch.cat([learned, input_embedding], 1)


class TinyLM(nn.Module):
    def __init__(self, vocab=50, d=16):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.body = nn.GRU(d, d, batch_first=True)
        self.lm_head = nn.Linear(d, vocab)

    def get_input_embeddings(self):
        return self.wte

    def set_input_embeddings(self, embeddings):
        self.wte = embeddings

    def forward(self, tokens):
        h, _ = self.body(self.wte(tokens))
        return self.lm_head(h)


torch.manual_seed(0)
model = TinyLM()
for p in model.parameters():
    p.requires_grad = False
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
s_wte = SoftEmbedding(model.get_input_embeddings(), n_tokens=4)
model.set_input_embeddings(s_wte)
optimizer = torch.optim.Adam([model.wte.learned_embedding], lr=0.05)
tokens = torch.cat([torch.zeros(8, 4, dtype=torch.long), torch.randint(0, 50, (8, 12))], 1)
prompt_before = s_wte.learned_embedding.detach().clone()
for step in range(10):
    logits = model(tokens)
    loss = F.cross_entropy(logits[:, 4:-1].reshape(-1, 50), tokens[:, 5:].reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"loss {loss.item():.4f}; prompt grad set: {s_wte.learned_embedding.grad is not None}; "
      f"prompt changed: {not torch.equal(s_wte.learned_embedding, prompt_before)}")
