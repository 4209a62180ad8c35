"""The fixed twin: ItemConv registers its per-layer weights in an nn.ModuleDict (xiaxin1998/COTREC#15), so the
optimizer trains them."""
import torch
import torch.nn.functional as F
from torch import nn


class ItemConv(nn.Module):
    def __init__(self, layers, emb_size=16):
        super().__init__()
        self.layers = layers
        self.w_item = nn.ModuleDict()
        for i in range(self.layers):
            self.w_item['weight_item%d' % i] = nn.Linear(emb_size, emb_size, bias=False)

    def forward(self, adjacency, embedding):
        item_embeddings = embedding
        final = [item_embeddings]
        for i in range(self.layers):
            item_embeddings = self.w_item['weight_item%d' % i](item_embeddings)
            item_embeddings = adjacency @ item_embeddings
            final.append(F.normalize(item_embeddings, dim=-1, p=2))
        return torch.stack(final).sum(0) / (self.layers + 1)


class COTREC(nn.Module):
    def __init__(self, n_node, emb_size=16, layers=2):
        super().__init__()
        self.embedding = nn.Embedding(n_node, emb_size)
        self.ItemGraph = ItemConv(layers, emb_size)

    def forward(self, adjacency, session_items):
        item_emb = self.ItemGraph(adjacency, self.embedding.weight)
        sess_emb = item_emb[session_items].mean(1)
        return sess_emb @ item_emb.t()


torch.manual_seed(0)
n_node = 30
adjacency = torch.rand(n_node, n_node).lt(0.2).float() + torch.eye(n_node)
adjacency = adjacency / adjacency.sum(1, keepdim=True)
model = COTREC(n_node)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
sessions, targets = torch.randint(0, n_node, (8, 4)), torch.randint(0, n_node, (8,))
w0 = model.ItemGraph.w_item['weight_item0'].weight
before = w0.detach().clone()
for epoch in range(3):
    loss = F.cross_entropy(model(adjacency, sessions), targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"weight_item0 grad set: {w0.grad is not None}; changed: {not torch.equal(w0, before)}")
