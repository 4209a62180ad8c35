"""The fixed twin: the adaptive adjacency stays in the graph, so W_phi and W_theta learn from the
classification loss (queenie88/A-GCN#4)."""
import torch
import torch.nn.functional as F
from torch import nn


class AGCN(nn.Module):
    def __init__(self, n_labels=6, emb_dim=12, feat_dim=16):
        super().__init__()
        self.label_emb = nn.Parameter(torch.randn(n_labels, emb_dim))
        self.W_phi = nn.Linear(emb_dim, 8, bias=False)
        self.W_theta = nn.Linear(emb_dim, 8, bias=False)
        self.gc1 = nn.Linear(emb_dim, 16)
        self.gc2 = nn.Linear(16, feat_dim)
        self.backbone = nn.Sequential(nn.Linear(32, feat_dim), nn.ReLU())

    def forward(self, images):
        adj = torch.softmax(self.W_phi(self.label_emb) @ self.W_theta(self.label_emb).t(), dim=-1)
        h = F.leaky_relu(adj @ self.gc1(self.label_emb), 0.2)
        classifiers = adj @ self.gc2(h)
        return self.backbone(images) @ classifiers.t()


torch.manual_seed(0)
model = AGCN()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
images, targets = torch.randn(32, 32), (torch.rand(32, 6) > 0.6).float()
phi_before = model.W_phi.weight.detach().clone()
for step in range(10):
    loss = F.multilabel_soft_margin_loss(model(images), targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"loss {loss.item():.4f}; W_phi changed: {not torch.equal(phi_before, model.W_phi.weight)}")
