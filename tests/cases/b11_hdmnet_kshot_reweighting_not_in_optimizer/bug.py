"""HDMNet few-shot segmentation (Pbihao/HDMNet#21): with shot > 1 the model weights the support shots with
`self.kshot_rw = nn.Linear(self.shot, self.shot)`, but get_optim lists the modules to train one by one and
kshot_rw is not among them, so "when shot is greater than 1, the parameters of self.kshot_rw are not put in the
optimizer to be updated"."""
import torch
import torch.nn.functional as F
from torch import nn


class OneModel(nn.Module):
    def __init__(self, shot=5, dim=16):
        super().__init__()
        self.shot = shot
        self.layer0 = nn.Conv2d(3, dim, 3, padding=1).requires_grad_(False)
        self.down_query = nn.Conv2d(dim, dim, 1)
        self.down_supp = nn.Conv2d(dim, dim, 1)
        self.transformer = nn.Conv2d(2 * dim, dim, 3, padding=1)
        self.cls = nn.Conv2d(dim, 2, 1)
        if self.shot > 1:
            self.kshot_rw = nn.Linear(self.shot, self.shot)

    def get_optim(self, model, lr):
        return torch.optim.SGD([
            {'params': model.down_query.parameters()},
            {'params': model.down_supp.parameters()},
            {'params': model.transformer.parameters()},
            {'params': model.cls.parameters()},  # <- optimizer
        ], lr=lr, momentum=0.9)

    def forward(self, query, supports):
        q = self.down_query(self.layer0(query))
        s = torch.stack([self.down_supp(self.layer0(x)).mean((2, 3)) for x in supports], -1)
        weights = self.kshot_rw(s.mean(1)).softmax(-1)
        proto = (s * weights.unsqueeze(1)).sum(-1)[:, :, None, None].expand_as(q)
        return self.cls(torch.relu(self.transformer(torch.cat([q, proto], 1))))


torch.manual_seed(0)
model = OneModel()
optimizer = model.get_optim(model, lr=0.01)
query, supports = torch.rand(2, 3, 12, 12), [torch.rand(2, 3, 12, 12) for _ in range(5)]
mask = torch.randint(0, 2, (2, 12, 12))
rw_before = model.kshot_rw.weight.detach().clone()
for step in range(3):
    loss = F.cross_entropy(model(query, supports), mask)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"kshot_rw grad set: {model.kshot_rw.weight.grad is not None}; "
      f"changed: {not torch.equal(model.kshot_rw.weight, rw_before)}")
