"""FairMOT's re-ID branch (ifzhang/FairMOT#125): the ID classifier lives in the loss module, and the optimizer is
built from the model only, so the classifier gets gradients but keeps its initial weights."""
import torch
import torch.nn.functional as F
from torch import nn


class MotLoss(nn.Module):
    def __init__(self, emb_dim=8, nID=5):
        super().__init__()
        self.classifier = nn.Linear(emb_dim, nID)

    def forward(self, emb, ids):
        return F.cross_entropy(self.classifier(F.normalize(emb, dim=1) * 4), ids)


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 8))
loss_fn = MotLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)  # <- optimizer
x, ids = torch.randn(40, 12), torch.randint(0, 5, (40,))
before = loss_fn.classifier.weight.clone()
for step in range(20):
    loss = loss_fn(model(x), ids)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("classifier changed:", not torch.equal(before, loss_fn.classifier.weight))
