"""PyG "GNNExplainer: hard_mask is True" (pyg-team/pytorch_geometric#7454): GNNExplainer's edge mask is injected into
every MessagePassing layer and applied to the messages inside `propagate`; the reporter's custom GNN layer aggregated
on its own (a dense adjacency product) instead of calling propagate, so the injected edge_mask never entered the
forward: edge_mask.grad stays None after the first backward, `hard_edge_mask = edge_mask.grad != 0.0` becomes the
plain bool True, and the edge mask learns nothing from the prediction (rusty1s: "your edges do not receive a gradient
at all"; the reporter: "I was using a custom GNN that didn't use PyG's message passing propagate method").
Fix: aggregate through self.propagate(...) so the explainer's mask is applied.
MessagePassing, set_masks and GNNExplainer._train are cut-down plain-torch copies of PyG 2.3's."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class MessagePassing(nn.Module):
    def __init__(self):
        super().__init__()
        self.explain = False
        self._edge_mask = None

    def propagate(self, edge_index, x):
        msg = x[edge_index[0]]
        if self.explain:
            msg = msg * self._edge_mask.sigmoid().view(-1, 1)
        return torch.zeros_like(x).index_add(0, edge_index[1], msg)


def to_dense_adj(edge_index, num_nodes):
    return torch.zeros(num_nodes, num_nodes).index_put((edge_index[1], edge_index[0]),
                                                       torch.ones(edge_index.size(1)), accumulate=True)


class MyConv(MessagePassing):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.lin = nn.Linear(in_channels, out_channels)

    def forward(self, x, edge_index):
        h = self.lin(x)
        return to_dense_adj(edge_index, x.size(0)) @ h + h  # <- unused_parameter


class GNN(nn.Module):
    def __init__(self, in_channels, hidden, out_channels):
        super().__init__()
        self.conv1 = MyConv(in_channels, hidden)
        self.conv2 = MyConv(hidden, out_channels)

    def forward(self, x, edge_index):
        return self.conv2(F.relu(self.conv1(x, edge_index)), edge_index)


def set_masks(model, mask):
    for module in model.modules():
        if isinstance(module, MessagePassing):
            module.explain = True
            module._edge_mask = mask


class GNNExplainer:
    def __init__(self, epochs=30, lr=0.01, edge_size=0.005):
        self.epochs, self.lr, self.edge_size = epochs, lr, edge_size
        self.hard_edge_mask = None

    def _loss(self, y_hat, y):
        loss = F.cross_entropy(y_hat, y)
        if self.hard_edge_mask is not None:
            m = self.edge_mask[self.hard_edge_mask].sigmoid()
            loss = loss + self.edge_size * m.sum()
        return loss

    def _train(self, model, x, edge_index, target, index):
        (N, F_), E = x.size(), edge_index.size(1)
        self.node_mask = nn.Parameter(0.1 * torch.randn(N, 1))
        self.edge_mask = nn.Parameter(torch.randn(E) * 0.1)
        set_masks(model, self.edge_mask)
        optimizer = torch.optim.Adam([self.node_mask, self.edge_mask], lr=self.lr)
        for i in range(self.epochs):
            optimizer.zero_grad()
            h = x * self.node_mask.sigmoid()
            y_hat, y = model(h, edge_index)[index], target[index]
            loss = self._loss(y_hat, y)
            loss.backward()
            optimizer.step()
            if i == 0:
                self.hard_node_mask = self.node_mask.grad != 0.0
                self.hard_edge_mask = self.edge_mask.grad != 0.0
        return self.edge_mask


num_nodes, num_edges = 20, 60
x, y = torch.randn(num_nodes, 8), torch.randint(0, 3, (num_nodes,))
edge_index = torch.randint(0, num_nodes, (2, num_edges))
model = GNN(8, 16, 3)
opt = torch.optim.Adam(model.parameters(), lr=0.01)
for epoch in range(20):
    opt.zero_grad()
    F.cross_entropy(model(x, edge_index), y).backward()
    opt.step()
model.eval()
model.requires_grad_(False)

explainer = GNNExplainer()
target = model(x, edge_index).argmax(-1)
edge_mask = explainer._train(model, x, edge_index, target, index=torch.tensor([3]))
print("hard_edge_mask:", explainer.hard_edge_mask if isinstance(explainer.hard_edge_mask, bool)
      else f"tensor, {int(explainer.hard_edge_mask.sum())} of {num_edges} edges")
