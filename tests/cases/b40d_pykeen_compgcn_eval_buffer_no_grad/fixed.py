# CompGCN-style KG model in the shape of PyKEEN's CombinedCompGCNRepresentations:
# the enriched entity/relation representations are buffered between calls and
# only invalidated in post_parameter_update(); the early stopper evaluates the
# model under torch.no_grad() and training then continues.
import torch
from torch import nn

torch.manual_seed(0)

num_entities, num_relations, dim = 14, 3, 8
edge_index = torch.stack([torch.randint(0, num_entities, (40,)), torch.randint(0, num_entities, (40,))])
edge_type = torch.randint(0, num_relations, (40,))


class CompGCNLayer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.w_ent = nn.Linear(dim, dim)
        self.w_rel = nn.Linear(dim, dim)

    def forward(self, x_e, x_r, edge_index, edge_type):
        source, target = edge_index
        msg = x_e[source] - x_r[edge_type]
        agg = torch.zeros_like(x_e).index_add(0, target, msg)
        return torch.tanh(self.w_ent(agg + x_e)), self.w_rel(x_r)


class CombinedCompGCNRepresentations(nn.Module):
    def __init__(self):
        super().__init__()
        self.entity_representations = nn.Embedding(num_entities, dim)
        self.relation_representations = nn.Embedding(num_relations, dim)
        self.layers = nn.ModuleList([CompGCNLayer(dim), CompGCNLayer(dim)])
        # initialize buffer of enriched representations
        self.enriched_representations = None

    def post_parameter_update(self):
        # invalidate enriched embeddings
        self.enriched_representations = None

    def train(self, mode: bool = True):
        # when changing from evaluation to training mode, the buffered representations have been computed without
        # gradient tracking. hence, we need to invalidate them.
        if mode and not self.training:
            self.enriched_representations = None
        return super().train(mode=mode)

    def forward(self):
        if self.enriched_representations is None:
            x_e = self.entity_representations.weight
            x_r = self.relation_representations.weight
            for layer in self.layers:
                x_e, x_r = layer(x_e=x_e, x_r=x_r, edge_index=edge_index, edge_type=edge_type)
            self.enriched_representations = (x_e, x_r)
        return self.enriched_representations


class CompGCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.combined = CombinedCompGCNRepresentations()

    def score_hrt(self, hrt):
        x_e, x_r = self.combined()
        h, r, t = x_e[hrt[:, 0]], x_r[hrt[:, 1]], x_e[hrt[:, 2]]
        return (h * r * t).sum(dim=-1)  # DistMult interaction


model = CompGCN()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
train = torch.stack([torch.randint(0, num_entities, (32,)), torch.randint(0, num_relations, (32,)),
                     torch.randint(0, num_entities, (32,))], dim=1)
valid = torch.stack([torch.randint(0, num_entities, (8,)), torch.randint(0, num_relations, (8,)),
                     torch.randint(0, num_entities, (8,))], dim=1)
labels = torch.ones(32)

for epoch in range(3):
    model.train()
    for batch in train.split(16):
        optimizer.zero_grad()
        scores = model.score_hrt(batch)
        loss = nn.functional.binary_cross_entropy_with_logits(scores, labels[: len(batch)])
        loss.backward()
        optimizer.step()
        model.combined.post_parameter_update()
    print("epoch", epoch, "loss", loss.item())

    # early stopper: evaluate every epoch
    model.eval()
    with torch.no_grad():
        valid_scores = model.score_hrt(valid)  # <- no_grad
    print("  validation mean score", valid_scores.mean().item())
