"""TuckER issue #17 "Why set padding_idx=0 in nn.Embedding", https://github.com/ibalazevic/TuckER/issues/17:
the knowledge-graph model builds its entity and relation tables as
    self.E = torch.nn.Embedding(len(d.entities), d1, padding_idx=0)
    self.R = torch.nn.Embedding(len(d.relations), d2, padding_idx=0)
although index 0 is a real entity / relation, not padding. padding_idx makes the embedding lookup send no gradient to
row 0, so relation 0's embedding never learns (it keeps the xavier_normal_ values model.init() wrote); entity 0 still
gets some gradient only through the 1-N scoring x @ E.weight.T. The reporter saw the gradient of the first entity and
relation stay zero; the author answered "This is a mistake and should be fixed".
Fix: build both tables without padding_idx. Model follows TuckER's model.py (shrunk, on CPU); the WN18/FB15k data
are replaced by a few seeded random triples that include relation 0 and entity 0."""
import numpy as np
import torch
from torch.nn.init import xavier_normal_

torch.manual_seed(0)
torch.set_num_threads(1)
np.random.seed(0)


class TuckER(torch.nn.Module):
    def __init__(self, d, d1, d2, **kwargs):
        super(TuckER, self).__init__()
        self.E = torch.nn.Embedding(len(d.entities), d1)
        self.R = torch.nn.Embedding(len(d.relations), d2)
        self.W = torch.nn.Parameter(torch.tensor(np.random.uniform(-1, 1, (d2, d1, d1)),
                                    dtype=torch.float, requires_grad=True))
        self.input_dropout = torch.nn.Dropout(kwargs["input_dropout"])
        self.hidden_dropout1 = torch.nn.Dropout(kwargs["hidden_dropout1"])
        self.hidden_dropout2 = torch.nn.Dropout(kwargs["hidden_dropout2"])
        self.loss = torch.nn.BCELoss()
        self.bn0 = torch.nn.BatchNorm1d(d1)
        self.bn1 = torch.nn.BatchNorm1d(d1)

    def init(self):
        xavier_normal_(self.E.weight.data)
        xavier_normal_(self.R.weight.data)

    def forward(self, e1_idx, r_idx):
        e1 = self.E(e1_idx)
        x = self.bn0(e1)
        x = self.input_dropout(x)
        x = x.view(-1, 1, e1.size(1))
        r = self.R(r_idx)
        W_mat = torch.mm(r, self.W.view(r.size(1), -1))
        W_mat = W_mat.view(-1, e1.size(1), e1.size(1))
        W_mat = self.hidden_dropout1(W_mat)
        x = torch.bmm(x, W_mat)
        x = x.view(-1, e1.size(1))
        x = self.bn1(x)
        x = self.hidden_dropout2(x)
        x = torch.mm(x, self.E.weight.transpose(1, 0))
        return torch.sigmoid(x)


class Data:
    entities = list(range(12))
    relations = list(range(4))


d = Data()
triples = [(int(np.random.randint(12)), int(np.random.randint(4)), int(np.random.randint(12))) for _ in range(40)]
triples += [(0, 0, 3), (5, 0, 0), (7, 0, 2)]  # relation 0 and entity 0 are real data
er_vocab = {}
for h, r, t in triples:
    er_vocab.setdefault((h, r), []).append(t)
er_pairs = list(er_vocab.keys())

model = TuckER(d, 8, 6, input_dropout=0.2, hidden_dropout1=0.2, hidden_dropout2=0.3)
model.init()
opt = torch.optim.Adam(model.parameters(), lr=0.005)
rel0_before = model.R.weight[0].detach().clone()

model.train()
for epoch in range(2):
    for j in range(0, len(er_pairs), 8):
        batch = er_pairs[j:j + 8]
        e1_idx = torch.tensor([p[0] for p in batch])
        r_idx = torch.tensor([p[1] for p in batch])
        targets = torch.zeros(len(batch), len(d.entities))
        for i, p in enumerate(batch):
            targets[i, er_vocab[p]] = 1.0
        opt.zero_grad()
        predictions = model.forward(e1_idx, r_idx)
        loss = model.loss(predictions, targets)
        loss.backward()
        opt.step()

print("R.weight.grad[0] abs sum:", model.R.weight.grad[0].abs().sum().item())
print("relation 0 embedding changed:", not torch.equal(rel0_before, model.R.weight[0]))
