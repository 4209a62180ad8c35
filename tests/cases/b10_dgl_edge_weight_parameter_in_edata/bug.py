"""Learnable edge weights in a GraphSAGE 'gcn' aggregator (dmlc/dgl#1579): `self.g.edata['w'] =
nn.Parameter(torch.randn(num_edges, 1))` in __init__ and message passing with u_mul_e('h', 'w'); the weights get
gradients, but they live in the graph's edge data, not on the module, so "self.g.edata['w'] is not shown in the
learnable parameter set" and the optimizer never updates them (the fix assigns the Parameter to the module first).
A small graph object with edata and an index_add aggregation stands in for DGL's update_all."""
import torch
import torch.nn.functional as F
from torch import nn


class Graph:
    def __init__(self, src, dst, num_nodes):
        self.src, self.dst, self.num_nodes = src, dst, num_nodes
        self.edata = {}

    def number_of_edges(self):
        return self.src.numel()

    def update_all_u_mul_e(self, h):
        messages = h[self.src] * self.edata['w']
        return torch.zeros(self.num_nodes, h.size(1)).index_add(0, self.dst, messages)


class SAGEConv(nn.Module):
    def __init__(self, g, in_feats, out_feats, aggregator_type='gcn'):
        super().__init__()
        self.g = g
        self._aggre_type = aggregator_type
        if aggregator_type == 'gcn':
            self.g.edata['w'] = nn.Parameter(torch.randn(self.g.number_of_edges(), 1))  # <- non_parameter_tensor
        self.fc_neigh = nn.Linear(in_feats, out_feats)

    def forward(self, feat):
        neigh = self.g.update_all_u_mul_e(feat)
        return self.fc_neigh((neigh + feat) / 2)


torch.manual_seed(0)
src, dst = torch.randint(0, 20, (60,)), torch.randint(0, 20, (60,))
g = Graph(src, dst, 20)
conv = SAGEConv(g, 8, 3)
optimizer = torch.optim.Adam(conv.parameters(), lr=1e-2)
feat, labels = torch.randn(20, 8), torch.randint(0, 3, (20,))
w_before = g.edata['w'].detach().clone()
for epoch in range(10):
    loss = F.cross_entropy(conv(feat), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"parameters: {[n for n, _ in conv.named_parameters()]}")
print(f"edge weight grad set: {g.edata['w'].grad is not None}; edge weight changed: {not torch.equal(g.edata['w'], w_before)}")
