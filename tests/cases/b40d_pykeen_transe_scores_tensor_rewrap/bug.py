# TransE in the style of early PyKEEN (SmartDataAnalytics/PyKEEN): the margin
# ranking loss helper re-wraps the score tensors with torch.tensor(...).
import numpy as np
import torch
from torch import nn

torch.manual_seed(0)
np.random.seed(0)


class TransE(nn.Module):
    def __init__(self, num_entities, num_relations, embedding_dim=16, margin=1.0):
        super().__init__()
        self.device = torch.device("cpu")
        self.embedding_dim = embedding_dim
        self.num_entities = num_entities
        self.entity_embeddings = nn.Embedding(num_entities, embedding_dim)
        self.relation_embeddings = nn.Embedding(num_relations, embedding_dim)
        self.criterion = nn.MarginRankingLoss(margin=margin)
        bound = 6 / np.sqrt(embedding_dim)
        nn.init.uniform_(self.entity_embeddings.weight.data, a=-bound, b=bound)
        nn.init.uniform_(self.relation_embeddings.weight.data, a=-bound, b=bound)

    def forward(self, batch_positives, batch_negatives):
        # Normalize embeddings of entities
        norms = torch.norm(self.entity_embeddings.weight, p=2, dim=1).data
        self.entity_embeddings.weight.data = self.entity_embeddings.weight.data.div(
            norms.view(self.num_entities, 1).expand_as(self.entity_embeddings.weight))
        pos_scores = self._score_triples(batch_positives)
        neg_scores = self._score_triples(batch_negatives)
        return self._compute_loss(pos_scores=pos_scores, neg_scores=neg_scores)

    def _compute_loss(self, pos_scores, neg_scores):
        y = np.repeat([-1], repeats=pos_scores.shape[0])
        y = torch.tensor(y, dtype=torch.float, device=self.device)

        # Scores for the positive and negative triples
        pos_scores = torch.tensor(pos_scores, dtype=torch.float, device=self.device)  # <- tensor_rewrap
        neg_scores = torch.tensor(neg_scores, dtype=torch.float, device=self.device)

        loss = self.criterion(pos_scores, neg_scores, y)
        return loss

    def _score_triples(self, triples):
        heads = self.entity_embeddings(triples[:, 0:1]).view(-1, self.embedding_dim)
        relations = self.relation_embeddings(triples[:, 1:2]).view(-1, self.embedding_dim)
        tails = self.entity_embeddings(triples[:, 2:3]).view(-1, self.embedding_dim)
        sum_res = heads + relations - tails
        return torch.norm(sum_res, dim=1, p=1).view(size=(-1,))


num_entities, num_relations = 20, 4
model = TransE(num_entities, num_relations)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

pos_triples = torch.stack([
    torch.randint(0, num_entities, (32,)),
    torch.randint(0, num_relations, (32,)),
    torch.randint(0, num_entities, (32,)),
], dim=1)

for epoch in range(3):
    corrupted = pos_triples.clone()
    corrupted[:, 2] = torch.randint(0, num_entities, (32,))
    optimizer.zero_grad()
    loss = model(pos_triples, corrupted)
    loss.backward()
    optimizer.step()
    print("epoch", epoch, "loss", loss.item())
