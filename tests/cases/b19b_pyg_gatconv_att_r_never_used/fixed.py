"""PyTorch Geometric GATConv (pyg-team/pytorch_geometric#1743,
https://github.com/pyg-team/pytorch_geometric/issues/1743): running the GAT example from the docs and printing
which parameters changed during training shows that conv1.att_r and conv2.att_r are never updated.
Why: GATConv.forward (PyG 1.6.x), for a plain Tensor input, computes both attention halves from att_l:
`alpha_l = alpha_r = (x_l * self.att_l).sum(dim=-1)`, so att_r is registered (and in the optimizer) but never takes
part in the loss; its .grad stays None (same bug as pyg-team/pytorch_geometric#1642).
Fix: alpha_r is computed from x_r and att_r, as in the fixed GATConv."""
import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn import Linear, Parameter


def softmax(src, index, num_nodes):  # torch_geometric.utils.softmax stand-in
    src_max = torch.full((num_nodes,) + src.shape[1:], -1e9).scatter_reduce(
        0, index.view(-1, 1).expand_as(src), src, reduce="amax", include_self=True)
    out = (src - src_max[index]).exp()
    out_sum = torch.zeros((num_nodes,) + src.shape[1:]).index_add(0, index, out)
    return out / (out_sum[index] + 1e-16)


class MessagePassing(torch.nn.Module):  # torch_geometric.nn.MessagePassing stand-in, aggr='add'
    def propagate(self, edge_index, x, alpha, size):
        j, i = edge_index
        msg = self.message(x[0][j], alpha[0][j], alpha[1][i], i, size)
        return torch.zeros((size,) + msg.shape[1:]).index_add(0, i, msg)


class GATConv(MessagePassing):  # torch_geometric.nn.GATConv as in PyG 1.6.x
    def __init__(self, in_channels, out_channels, heads=1, concat=True, negative_slope=0.2, dropout=0.0):
        super().__init__()
        self.heads, self.out_channels, self.concat = heads, out_channels, concat
        self.negative_slope, self.dropout = negative_slope, dropout
        self.lin_l = Linear(in_channels, heads * out_channels, bias=False)
        self.lin_r = self.lin_l
        self.att_l = Parameter(torch.empty(1, heads, out_channels))
        self.att_r = Parameter(torch.empty(1, heads, out_channels))
        self.bias = Parameter(torch.zeros(heads * out_channels if concat else out_channels))
        torch.nn.init.xavier_uniform_(self.att_l)
        torch.nn.init.xavier_uniform_(self.att_r)

    def forward(self, x, edge_index):
        H, C = self.heads, self.out_channels
        if isinstance(x, Tensor):
            x_l = x_r = self.lin_l(x).view(-1, H, C)
            alpha_l, alpha_r = (x_l * self.att_l).sum(dim=-1), (x_r * self.att_r).sum(dim=-1)
        num_nodes = x_l.size(0)
        loops = torch.arange(num_nodes).repeat(2, 1)  # add_self_loops
        edge_index = torch.cat([edge_index, loops], dim=1)
        out = self.propagate(edge_index, x=(x_l, x_r), alpha=(alpha_l, alpha_r), size=num_nodes)
        out = out.view(-1, H * C) if self.concat else out.mean(dim=1)
        return out + self.bias

    def message(self, x_j, alpha_j, alpha_i, index, size_i):
        alpha = alpha_j + alpha_i
        alpha = F.leaky_relu(alpha, self.negative_slope)
        alpha = softmax(alpha, index, size_i)
        alpha = F.dropout(alpha, p=self.dropout, training=self.training)
        return x_j * alpha.unsqueeze(-1)


torch.manual_seed(0)
num_nodes, num_features, num_classes = 30, 12, 3  # a small stand-in for Planetoid('Cora')
x = torch.randn(num_nodes, num_features)
edge_index = torch.randint(0, num_nodes, (2, 90))
y = torch.randint(0, num_classes, (num_nodes,))
train_mask = torch.arange(num_nodes) < 20


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = GATConv(num_features, 8, heads=8, dropout=0.6)
        self.conv2 = GATConv(8 * 8, num_classes, heads=1, concat=False, dropout=0.6)

    def forward(self):
        h = F.dropout(x, p=0.6, training=self.training)
        h = F.elu(self.conv1(h, edge_index))
        h = F.dropout(h, p=0.6, training=self.training)
        h = self.conv2(h, edge_index)
        return F.log_softmax(h, dim=1)


model = Net()
optimizer = torch.optim.Adam(model.parameters(), lr=0.005, weight_decay=5e-4)
before = {n: p.detach().clone() for n, p in model.named_parameters()}
for epoch in range(5):
    model.train()
    optimizer.zero_grad()
    loss = F.nll_loss(model()[train_mask], y[train_mask])
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch} loss={loss.item():.4f}")
for n, p in model.named_parameters():
    if torch.equal(before[n], p):
        print("not modified:", n, "grad is None:", p.grad is None)
