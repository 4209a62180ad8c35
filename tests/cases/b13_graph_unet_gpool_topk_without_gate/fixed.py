"""The fixed twin: gPool gates the kept node features with their sigmoid scores (bknyaz/graph_nn#2), so the
projection vector gets a gradient and learns which nodes to keep."""
import torch
import torch.nn.functional as F
from torch import nn


class GraphConv(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.fc = nn.Linear(n_in, n_out)

    def forward(self, x, A):
        return F.relu(self.fc(A @ x))


class GraphUnetPool(nn.Module):
    def __init__(self, n_feat=8, hidden=16, n_class=2, ratio=0.5):
        super().__init__()
        self.ratio = ratio
        self.gconv1, self.gconv2 = GraphConv(n_feat, hidden), GraphConv(hidden, hidden)
        self.proj = nn.Linear(hidden, 1, bias=False)
        self.fc = nn.Linear(hidden, n_class)

    def forward(self, x, A):
        x = self.gconv1(x, A)
        scores = (x @ self.proj.weight.t()).squeeze(-1) / self.proj.weight.norm()
        idx = torch.topk(scores, int(self.ratio * x.size(0))).indices
        x = x[idx] * torch.sigmoid(scores[idx]).unsqueeze(-1)
        A = A[idx][:, idx]
        x = self.gconv2(x, A)
        return self.fc(x.max(0).values)


torch.manual_seed(0)
model = GraphUnetPool()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
graphs = [(torch.randn(10, 8), (torch.rand(10, 10) < 0.3).float() + torch.eye(10), torch.tensor(i % 2)) for i in range(4)]
p_before = model.proj.weight.detach().clone()
for epoch in range(2):
    for x, A, y in graphs:
        loss = F.cross_entropy(model(x, A).unsqueeze(0), y.unsqueeze(0))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
print(f"proj grad set: {model.proj.weight.grad is not None}; proj changed: {not torch.equal(model.proj.weight, p_before)}")
