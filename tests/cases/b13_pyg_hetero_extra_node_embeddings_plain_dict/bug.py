"""A heterogeneous GNN with learnable embeddings for the featureless node types (pyg-team/pytorch_geometric#3604,
comment of 2022-01-27): the nn.Embedding per extra node type is kept in a plain dict (`self.embeddings = {...}`)
and "forced trainable" with `requires_grad = True`, but the dict hides them from model.parameters(): the
embeddings feed the message passing and get gradients, yet the optimizer never updates them ("I don't think the
weights of the embedding layers are being updated at all"). The fix registers them in an nn.ModuleDict."""
import torch
import torch.nn.functional as F
from torch import nn


class HeteroGNN(nn.Module):
    def __init__(self, num_nodes, extra_node_types, in_channels=8, hidden=16, out_channels=3):
        super().__init__()
        self.rel_lins = nn.ModuleDict({nt: nn.Linear(in_channels, hidden) for nt in extra_node_types})
        self.lin1 = nn.Linear(hidden, hidden)
        self.lin2 = nn.Linear(hidden, out_channels)
        self.embeddings = {nt: nn.Embedding(num_nodes[nt], in_channels) for nt in extra_node_types}  # <- non_parameter_tensor
        for nt in extra_node_types:
            self.embeddings[nt].requires_grad = True  # force trainable

    def forward(self, x_dict, edge_index_dict):
        x_dict = dict(x_dict)
        for nt, emb in self.embeddings.items():
            x_dict[nt] = emb.weight
        paper = torch.zeros(x_dict['paper'].size(0), self.lin1.in_features)
        for (src, _, dst), edge_index in edge_index_dict.items():
            msg = self.rel_lins[src](x_dict[src])[edge_index[0]]
            paper = paper.index_add(0, edge_index[1], msg)
        return self.lin2(F.relu(self.lin1(F.relu(paper))))


torch.manual_seed(0)
num_nodes = {'paper': 12, 'author': 6, 'venue': 3}
x_dict = {'paper': torch.randn(12, 8)}
edge_index_dict = {('author', 'writes', 'paper'): torch.stack([torch.randint(0, 6, (20,)), torch.randint(0, 12, (20,))]),
                   ('venue', 'publishes', 'paper'): torch.stack([torch.randint(0, 3, (12,)), torch.arange(12)])}
y = torch.randint(0, 3, (12,))
model = HeteroGNN(num_nodes, ['author', 'venue'])
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
before = model.embeddings['author'].weight.detach().clone()
for epoch in range(3):
    loss = F.cross_entropy(model(x_dict, edge_index_dict), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
emb = model.embeddings['author'].weight
print(f"author embedding grad set: {emb.grad is not None}; changed: {not torch.equal(emb, before)}")
