"""Relational aggregation module (pytorch/pytorch#632, https://github.com/pytorch/pytorch/issues/632; answer:
plain containers are not traversed, use nn.ParameterDict/ModuleDict): inside __init__ the per-relation
aggregation weights are nn.Parameters kept in a plain dict of dicts (`self.waggrs[rel] = {'w': ..., 'b': ...}`)
and the per-relation linear layers in another plain dict (`self.list_relations`). Neither is registered, so
model.parameters() holds none of them: every one gets a gradient, but the optimizer only ever
sees the classifier. The fix registers them with nn.ParameterDict / nn.ModuleDict."""
import torch
import torch.nn as nn

numfeatures, numrel, nrels = 6, 4, 10


class RelationalNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.waggrs = nn.ModuleDict()
        self.list_relations = nn.ModuleDict()
        for rel in range(nrels):
            self.waggrs[str(rel)] = nn.ParameterDict({'w': nn.Parameter(1. + torch.randn(1, 2)),
                                                      'b': nn.Parameter(torch.zeros(1, 4))})
            self.list_relations[str(rel)] = nn.Linear(numfeatures, numrel)
        self.classifier = nn.Linear(numrel, numrel)

    def forward(self, x, rels):
        out = []
        for rel in range(nrels):
            h = self.list_relations[str(rel)](x[rels == rel])
            agg = torch.stack([h.mean(0), h.max(0).values], -1)  # (numrel, 2)
            out.append((agg @ self.waggrs[str(rel)]['w'].t()).t() + self.waggrs[str(rel)]['b'])
        return self.classifier(torch.cat(out))


torch.manual_seed(0)
x = torch.randn(200, numfeatures)
rels = torch.arange(200) % nrels
target = torch.randn(nrels, numrel)
model = RelationalNet()
print("registered parameters:", len(list(model.parameters())))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
w0 = model.waggrs['0']['w'].detach().clone()
for it in range(20):
    loss = (model(x, rels) - target).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if it % 10 == 0:
        print(it, f"{loss.item():.4f}")
print(f"waggrs[0]['w'] grad set: {model.waggrs['0']['w'].grad is not None}; "
      f"changed: {not torch.equal(w0, model.waggrs['0']['w'].detach())}")
