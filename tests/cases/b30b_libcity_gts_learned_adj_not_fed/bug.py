"""LibCity (LibCity/Bigscity-LibCity) issue #302 "One possible bug in the implementation of GTS",
https://github.com/LibCity/Bigscity-LibCity/issues/302: GTS learns a graph from the training series (conv1/conv2/fc
-> fc_out/fc_cat over all node pairs -> hard Gumbel-softmax -> adj), but LibCity's forward ran the DCGRU encoder and
decoder on the fixed prior adjacency, so "the learned adjacent matrix cannot affect the graph convolution"; the
original GTS code passes adj into encoder and decoder. The maintainer (aptx1231) confirmed and fixed it by passing
adj. With epoch_use_regularization = 0 (no BCE term against the prior graph) the graph learner never gets a
gradient and never changes. Plain torch: the diffusion graph convolution is a dense matmul."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)


def gumbel_softmax(logits, temperature, eps=1e-10):
    U = torch.rand(logits.size())
    y_soft = F.softmax((logits - torch.log(-torch.log(U + eps) + eps)) / temperature, dim=-1)
    y_hard = torch.zeros_like(y_soft).scatter_(-1, y_soft.max(-1)[1].unsqueeze(-1), 1.0)
    return y_hard - y_soft.detach() + y_soft


class DCGRUCell(nn.Module):
    def __init__(self, input_dim, num_units, num_nodes):
        super().__init__()
        self.num_nodes, self.num_units = num_nodes, num_units
        self.ru = nn.Linear(2 * (input_dim + num_units), 2 * num_units)
        self.c = nn.Linear(2 * (input_dim + num_units), num_units)

    def gconv(self, lin, inputs, state, adj_mx):
        x = torch.cat([inputs, state], dim=-1)                       # (B, N, F)
        return lin(torch.cat([x, torch.matmul(adj_mx, x)], dim=-1))  # [T0 x, T1 x]

    def forward(self, inputs, hx, adj):
        adj = adj + torch.eye(self.num_nodes)
        adj_mx = (adj / adj.sum(1, keepdim=True)).t()                # random-walk matrix
        r, u = torch.sigmoid(self.gconv(self.ru, inputs, hx, adj_mx)).split(self.num_units, dim=-1)
        c = torch.tanh(self.gconv(self.c, inputs, r * hx, adj_mx))
        return u * hx + (1.0 - u) * c


class GTS(nn.Module):
    def __init__(self, adj_mx, train_feas, rnn_units=8, horizon=3, kernal_size=4, embedding_dim=16):
        super().__init__()
        self.num_nodes, self.rnn_units, self.horizon = adj_mx.shape[0], rnn_units, horizon
        self.adj_mx = adj_mx
        self.node_feas = train_feas
        self.encoder_model = DCGRUCell(1, rnn_units, self.num_nodes)
        self.decoder_model = DCGRUCell(1, rnn_units, self.num_nodes)
        self.projection_layer = nn.Linear(rnn_units, 1)
        self.conv1 = nn.Conv1d(1, 8, kernal_size)
        self.conv2 = nn.Conv1d(8, 16, kernal_size)
        self.fc = nn.Linear((train_feas.shape[0] - 2 * kernal_size + 2) * 16, embedding_dim)
        self.fc_out = nn.Linear(embedding_dim * 2, embedding_dim)
        self.fc_cat = nn.Linear(embedding_dim, 2)
        off_diag = np.ones([self.num_nodes, self.num_nodes])
        self.rel_rec = torch.FloatTensor(np.eye(self.num_nodes)[np.where(off_diag)[0]])
        self.rel_send = torch.FloatTensor(np.eye(self.num_nodes)[np.where(off_diag)[1]])

    def forward(self, inputs):
        x = self.node_feas.transpose(1, 0).view(self.num_nodes, 1, -1)
        x = F.relu(self.conv2(F.relu(self.conv1(x))))
        x = F.relu(self.fc(x.view(self.num_nodes, -1)))
        x = torch.cat([torch.matmul(self.rel_send, x), torch.matmul(self.rel_rec, x)], dim=1)
        x = self.fc_cat(torch.relu(self.fc_out(x)))
        adj = gumbel_softmax(x, temperature=0.5)[:, 0].clone().reshape(self.num_nodes, -1)
        adj = adj.masked_fill(torch.eye(self.num_nodes).bool(), 0)

        batch_size = inputs.size(0)
        hx = torch.zeros(batch_size, self.num_nodes, self.rnn_units)
        for t in range(inputs.size(1)):
            hx = self.encoder_model(inputs[:, t], hx, self.adj_mx)  # <- unused_parameter
        dec_in, outputs = torch.zeros(batch_size, self.num_nodes, 1), []
        for t in range(self.horizon):
            hx = self.decoder_model(dec_in, hx, self.adj_mx)
            dec_in = self.projection_layer(hx)
            outputs.append(dec_in)
        return torch.stack(outputs, dim=1), x[:, 0].clone().reshape(self.num_nodes, -1)


num_nodes, T = 6, 40
series = torch.sin(torch.arange(T).float()[:, None] / 3 + torch.arange(num_nodes).float()) + 0.1 * torch.randn(T, num_nodes)
adj_prior = (torch.rand(num_nodes, num_nodes) > 0.5).float()
model = GTS(adj_prior, series[:30])
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
epoch_use_regularization = 0
fc_cat_before = model.fc_cat.weight.detach().clone()
for epoch in range(2):
    for start in (0, 8):
        X = torch.stack([series[s:s + 6] for s in range(start, start + 8)]).unsqueeze(-1)
        y = torch.stack([series[s + 6:s + 9] for s in range(start, start + 8)]).unsqueeze(-1)
        optimizer.zero_grad()
        y_predicted, mid_output = model(X)
        loss = torch.abs(y_predicted - y).mean()
        if epoch < epoch_use_regularization:
            loss = loss + F.binary_cross_entropy(torch.sigmoid(mid_output.reshape(-1)), adj_prior.reshape(-1))
        loss.backward()
        optimizer.step()

print(f"loss {loss.item():.4f}")
print("fc_cat.weight.grad is None:", model.fc_cat.weight.grad is None)
print("graph learner changed:", not torch.equal(fc_cat_before, model.fc_cat.weight.detach()))
