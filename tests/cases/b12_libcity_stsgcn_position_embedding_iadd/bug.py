"""LibCity's STSGCN (LibCity/Bigscity-LibCity#303): PositionEmbedding adds its learnable embeddings in place,
`data += self.temporal_emb`, into the first STSGCL layer's input, the ReLU output saved for ReLU's backward, so backward
fails with "one of the variables needed for gradient computation has been modified by an inplace operation". The
reporter's fix, merged upstream, passes a copy: `data = stsgcl_layer(data.clone(), self.adj)`."""
import torch
from torch import nn

class PositionEmbedding(nn.Module):
    def __init__(self, t, n, c):
        super().__init__()
        self.temporal_emb = nn.Parameter(nn.init.xavier_uniform_(torch.zeros(1, t, 1, c)))
        self.spatial_emb = nn.Parameter(nn.init.xavier_uniform_(torch.zeros(1, 1, n, c)))

    def forward(self, data):  # (batch, time, nodes, channels)
        data += self.temporal_emb  # <- inplace_saved
        data += self.spatial_emb
        return data

class Stsgcm(nn.Module):  # GLU graph convolutions on the local 3-step graph, max-aggregated
    def __init__(self, filters, c, n):
        super().__init__()
        self.n = n
        self.layers = nn.ModuleList([nn.Linear(c_i, 2 * f) for c_i, f in zip((c,) + tuple(filters[:-1]), filters)])

    def forward(self, data, adj):
        outs = []
        for layer in self.layers:
            lhs, rhs = layer(adj @ data).chunk(2, -1)
            data = lhs * torch.sigmoid(rhs)
            outs.append(data[:, self.n:2 * self.n])
        return torch.stack(outs).max(0)[0]

class STSGCL(nn.Module):
    def __init__(self, t, n, c, filters):
        super().__init__()
        self.n, self.c = n, c
        self.position_embedding = PositionEmbedding(t, n, c)
        self.gcms = nn.ModuleList([Stsgcm(filters, c, n) for _ in range(t - 2)])

    def forward(self, data, adj):
        data = self.position_embedding(data)
        return torch.stack([gcm(data[:, i:i + 3].reshape(-1, 3 * self.n, self.c), adj)
                            for i, gcm in enumerate(self.gcms)], 1)

class STSGCN(nn.Module):
    def __init__(self, adj, n, t=6, c_in=1, emb=16, filters=(16, 16), horizon=2):
        super().__init__()
        self.register_buffer("adj", adj)
        self.first_layer_embedding = nn.Linear(c_in, emb)
        self.stsgcl_layers = nn.ModuleList([STSGCL(t, n, emb, filters), STSGCL(t - 2, n, filters[-1], filters)])
        self.output = nn.Linear((t - 4) * filters[-1], horizon)

    def forward(self, x):
        data = torch.relu(self.first_layer_embedding(x))
        for stsgcl_layer in self.stsgcl_layers:
            data = stsgcl_layer(data, self.adj)
        return self.output(data.permute(0, 2, 1, 3).flatten(2)).transpose(1, 2)

torch.manual_seed(0)
n = 8  # road sensors
a = ((torch.rand(n, n) < 0.3) | torch.eye(n, dtype=torch.bool)).float()
adj = torch.block_diag(a, a, a) + torch.eye(3 * n).roll(n, 1) + torch.eye(3 * n).roll(-n, 1)  # local 3-step graph
model = STSGCN(adj.clamp(max=1), n)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
x, y = torch.rand(4, 6, n, 1), torch.rand(4, 2, n)
for epoch in range(2):
    loss = nn.functional.smooth_l1_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
