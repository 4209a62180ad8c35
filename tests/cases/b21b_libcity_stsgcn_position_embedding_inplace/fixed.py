"""LibCity STSGCN (LibCity/Bigscity-LibCity#303, https://github.com/LibCity/Bigscity-LibCity/issues/303): training
the spatial-temporal synchronous graph convolutional network stops at loss.backward() with "RuntimeError: one of
the variables needed for gradient computation has been modified by an inplace operation".
Why: STSGCN.forward passes torch.relu(self.first_layer_embedding(data)) to the first STSGCL layer, whose
PositionEmbedding.forward adds the temporal/spatial embeddings with `data += ...`. That writes in place into the
ReLU output, which ReluBackward saved for backward.
Fix: add out of place (data = data + self.temporal_emb); the reporter instead passed data.clone() to stsgcl_layer
in STSGCN.forward, which the project kept."""
import numpy as np
import torch
import torch.nn as nn


class PositionEmbedding(nn.Module):
    def __init__(self, input_length, num_of_vertices, embedding_size, temporal=True, spatial=True):
        super(PositionEmbedding, self).__init__()
        self.temporal = temporal
        self.spatial = spatial
        self.temporal_emb = torch.nn.Parameter(torch.zeros((1, input_length, 1, embedding_size)))
        nn.init.xavier_uniform_(self.temporal_emb)
        self.spatial_emb = torch.nn.Parameter(torch.zeros((1, 1, num_of_vertices, embedding_size)))
        nn.init.xavier_uniform_(self.spatial_emb)

    def forward(self, data):
        if self.temporal:
            data = data + self.temporal_emb
        if self.spatial:
            data += self.spatial_emb
        return data


class GcnOperation(nn.Module):
    def __init__(self, num_of_filter, num_of_features, num_of_vertices, activation):
        super().__init__()
        self.num_of_filter = num_of_filter
        self.activation = activation
        self.layer = nn.Linear(num_of_features, 2 * num_of_filter)

    def forward(self, data, adj):
        data = torch.matmul(adj, data)
        data = self.layer(data)
        lhs, rhs = data.split(self.num_of_filter, -1)
        return lhs * torch.sigmoid(rhs)


class Stsgcm(nn.Module):
    def __init__(self, filters, num_of_features, num_of_vertices, activation):
        super().__init__()
        self.num_of_vertices = num_of_vertices
        self.layers = nn.ModuleList()
        for i in range(len(filters)):
            self.layers.append(GcnOperation(filters[i], num_of_features, num_of_vertices, activation))
            num_of_features = filters[i]

    def forward(self, data, adj):
        need_concat = []
        for i in range(len(self.layers)):
            data = self.layers[i](data, adj)
            need_concat.append(torch.transpose(data, 1, 0))
        need_concat = [torch.unsqueeze(i[self.num_of_vertices:2 * self.num_of_vertices, :, :], dim=0)
                       for i in need_concat]
        return torch.max(torch.cat(need_concat, dim=0), dim=0)[0]


class STSGCNLayerIndividual(nn.Module):
    """STSGCL with module_type='individual'."""
    def __init__(self, t, num_of_vertices, num_of_features, filters, activation):
        super().__init__()
        self.T = t
        self.num_of_vertices = num_of_vertices
        self.num_of_features = num_of_features
        self.position_embedding = PositionEmbedding(t, num_of_vertices, num_of_features)
        self.gcms = nn.ModuleList()
        for i in range(self.T - 2):
            self.gcms.append(Stsgcm(filters, num_of_features, num_of_vertices, activation=activation))

    def forward(self, data, adj):
        data = self.position_embedding(data)
        need_concat = []
        for i in range(self.T - 2):
            t = data[:, i:i + 3, :, :]
            t = torch.reshape(t, (-1, 3 * self.num_of_vertices, self.num_of_features))
            t = self.gcms[i](t, adj)
            t = torch.transpose(t, 0, 1)
            need_concat.append(torch.unsqueeze(t, dim=1))
        return torch.cat(need_concat, dim=1)


def construct_adj(a, steps):
    n = len(a)
    adj = np.zeros([n * steps] * 2)
    for i in range(steps):
        adj[i * n: (i + 1) * n, i * n: (i + 1) * n] = a
    for i in range(n):
        for k in range(steps - 1):
            adj[k * n + i, (k + 1) * n + i] = 1
            adj[(k + 1) * n + i, k * n + i] = 1
    for i in range(len(adj)):
        adj[i, i] = 1
    return adj


class STSGCN(nn.Module):
    def __init__(self, adj_mx, num_nodes, feature_dim, input_window, output_window, filter_list):
        super().__init__()
        self.num_of_vertices = num_nodes
        self.adj = torch.tensor(construct_adj(adj_mx, 3), requires_grad=False, dtype=torch.float32)
        self.first_layer_embedding = nn.Linear(feature_dim, 16)
        self.num_of_features = 16
        self.input_length = input_window
        self.stsgcl_layers = nn.ModuleList()
        for filters in filter_list:
            self.stsgcl_layers.append(STSGCNLayerIndividual(self.input_length, num_nodes, self.num_of_features,
                                                            filters, activation='GLU'))
            self.input_length -= 2
            self.num_of_features = filters[-1]
        self.output = nn.Linear(self.input_length * self.num_of_features, output_window)
        self.loss = nn.SmoothL1Loss(beta=1)

    def forward(self, batch):
        data = batch['X']
        data = torch.relu(self.first_layer_embedding(data))
        for stsgcl_layer in self.stsgcl_layers:
            data = stsgcl_layer(data, self.adj)
        data = torch.transpose(data, 1, 2).reshape(data.shape[0], self.num_of_vertices, -1)
        return self.output(data).permute(0, 2, 1).unsqueeze(-1)

    def calculate_loss(self, batch):
        return self.loss(self.forward(batch), batch['y'])


torch.manual_seed(0)
num_nodes = 5
adj_mx = (np.random.RandomState(0).rand(num_nodes, num_nodes) > 0.5).astype(np.float32)
model = STSGCN(adj_mx, num_nodes, feature_dim=1, input_window=6, output_window=2, filter_list=[[16, 16], [16, 16]])
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
batch = {'X': torch.randn(4, 6, num_nodes, 1), 'y': torch.randn(4, 2, num_nodes, 1)}
for step in range(3):
    optimizer.zero_grad()
    loss = model.calculate_loss(batch)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
