"""RecBole's ContextSeqEmbAbstractLayer (RUCAIBox/RecBole#1128, DIEN on ml-100k): the per-field embedding tables are
kept in plain Python dicts, `self.token_embedding_table = {}`, so the embedding modules put into them are not
submodules; `model.parameters()` never yields their weights, the trainer's optimizer does not hold them, and "the
item embedding of epoch 1 and epoch 3 are exactly the same" although the loss backpropagates into them. The fix in
the report: `nn.ModuleDict()` for the three tables."""
import torch
import torch.nn.functional as F
from torch import nn


class ContextSeqEmbLayer(nn.Module):
    def __init__(self, field_dims, embedding_size=8):
        super().__init__()
        self.token_embedding_table = nn.ModuleDict()
        for field, n in field_dims.items():
            self.token_embedding_table[field] = nn.Embedding(n, embedding_size)

    def forward(self, user, item_seq, target_item):
        return (self.token_embedding_table['user'](user), self.token_embedding_table['item'](item_seq),
                self.token_embedding_table['item'](target_item))


class DIN(nn.Module):  # attention over the interaction history (DIEN's interest extractor, reduced)
    def __init__(self, field_dims, d=8):
        super().__init__()
        self.embedding_layer = ContextSeqEmbLayer(field_dims, d)
        self.att = nn.Sequential(nn.Linear(4 * d, 16), nn.ReLU(), nn.Linear(16, 1))
        self.dnn = nn.Sequential(nn.Linear(3 * d, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, user, item_seq, target_item):
        u, seq, tgt = self.embedding_layer(user, item_seq, target_item)
        q = tgt[:, None, :].expand_as(seq)
        w = torch.softmax(self.att(torch.cat([q, seq, q - seq, q * seq], -1)).squeeze(-1), dim=1)
        interest = (w[:, :, None] * seq).sum(1)
        return self.dnn(torch.cat([u, interest, tgt], -1)).squeeze(-1)


torch.manual_seed(0)
model = DIN({'user': 20, 'item': 50})
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
item_emb = model.embedding_layer.token_embedding_table['item'].weight
item_emb_1 = item_emb.detach().clone()
before = {n: p.detach().clone() for n, p in model.named_parameters()}
for epoch in range(3):
    user, seq, target = torch.randint(0, 20, (16,)), torch.randint(0, 50, (16, 5)), torch.randint(0, 50, (16,))
    label = torch.randint(0, 2, (16,)).float()
    loss = F.binary_cross_entropy_with_logits(model(user, seq, target), label)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
for n, p in model.named_parameters():
    print(n, "grad", p.grad is not None, "changed", not torch.equal(before[n], p))
