# Graph Transformer Networks (model_sparse.py): GTConv softmax-weights over edge types, GTLayer
# multiplies the selected adjacency matrices with torch_sparse.spspmm, then a GCN runs on the
# resulting meta-path graph. With torch_sparse 0.5.x spspmm has no autograd: Ws stay at 0.2.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
N = 12  # nodes


class SpSpMM(torch.autograd.Function):
    # stands for torch_sparse.spspmm (0.5.x): a compiled kernel with no gradient formula
    @staticmethod
    def forward(ctx, indexA, valueA, indexB, valueB, n):
        A = torch.sparse_coo_tensor(indexA, valueA, (n, n)).to_dense()
        B = torch.sparse_coo_tensor(indexB, valueB, (n, n)).to_dense()
        C = (A @ B).to_sparse().coalesce()
        return C.indices(), C.values()

    @staticmethod
    def backward(ctx, grad_index, grad_value):
        return None, None, None, None, None  # <- non_differentiable


def spspmm(indexA, valueA, indexB, valueB, n):
    return SpSpMM.apply(indexA, valueA, indexB, valueB, n)


class GTConv(nn.Module):
    def __init__(self, in_channels, out_channels, num_nodes):
        super().__init__()
        self.weight = nn.Parameter(torch.Tensor(out_channels, in_channels))
        nn.init.constant_(self.weight, 1)
        self.num_nodes = num_nodes

    def forward(self, A):
        filter = F.softmax(self.weight, dim=1)
        results = []
        for i in range(filter.shape[0]):
            idx = torch.cat([e for e, _ in A], dim=1)
            val = torch.cat([v * filter[i][j] for j, (_, v) in enumerate(A)])
            s = torch.sparse_coo_tensor(idx.detach(), val, (self.num_nodes, self.num_nodes)).coalesce()
            results.append((s.indices(), s.values()))
        return results


class GTLayer(nn.Module):
    def __init__(self, in_channels, out_channels, num_nodes, first=True):
        super().__init__()
        self.first = first
        self.num_nodes = num_nodes
        self.conv1 = GTConv(in_channels, out_channels, num_nodes)
        if first:
            self.conv2 = GTConv(in_channels, out_channels, num_nodes)

    def forward(self, A, H_=None):
        if self.first:
            result_A, result_B = self.conv1(A), self.conv2(A)
            W = [F.softmax(self.conv1.weight, dim=1).detach(), F.softmax(self.conv2.weight, dim=1).detach()]
        else:
            result_A, result_B = H_, self.conv1(A)
            W = [F.softmax(self.conv1.weight, dim=1).detach()]
        H = []
        for (a_edge, a_value), (b_edge, b_value) in zip(result_A, result_B):
            H.append(spspmm(a_edge, a_value, b_edge, b_value, self.num_nodes))
        return H, W


class GTN(nn.Module):
    def __init__(self, num_edge, num_channels, w_in, w_out, num_class, num_nodes, num_layers):
        super().__init__()
        self.layers = nn.ModuleList([GTLayer(num_edge, num_channels, num_nodes, first=(i == 0))
                                     for i in range(num_layers)])
        self.gcn_weight = nn.Parameter(torch.randn(w_in, w_out) * 0.1)
        self.linear1 = nn.Linear(w_out * num_channels, w_out)
        self.linear2 = nn.Linear(w_out, num_class)
        self.num_nodes = num_nodes

    def gcn(self, X, edge_index, edge_weight):
        h = X @ self.gcn_weight
        out = torch.zeros(self.num_nodes, h.shape[1])
        return out.index_add(0, edge_index[1], h[edge_index[0]] * edge_weight.unsqueeze(-1))

    def forward(self, A, X, target_x, target):
        Ws = []
        H = None
        for i, layer in enumerate(self.layers):
            H, W = layer(A) if i == 0 else layer(A, H)
            Ws.append(W)
        X_ = torch.cat([F.relu(self.gcn(X, e.detach(), w)) for e, w in H], dim=1)
        y = self.linear2(F.relu(self.linear1(X_)))[target_x]
        return F.cross_entropy(y, target), y, Ws


# 4 edge types (e.g. MD, DM, MA, AM) plus identity, as in the IMDB data
A = []
for _ in range(4):
    adj = (torch.rand(N, N) < 0.3).float()
    idx = adj.nonzero().t()
    A.append((idx, torch.ones(idx.shape[1])))
A.append((torch.arange(N).repeat(2, 1), torch.ones(N)))
X = torch.randn(N, 8)
target_x = torch.arange(8)
target = torch.randint(0, 3, (8,))

model = GTN(num_edge=len(A), num_channels=2, w_in=8, w_out=16, num_class=3, num_nodes=N, num_layers=2)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
for epoch in range(3):
    optimizer.zero_grad()
    loss, y, Ws = model(A, X, target_x, target)
    loss.backward()
    optimizer.step()
    print("epoch", epoch, "loss", round(loss.item(), 4), "Ws", Ws[0][0][0].tolist())
print("GTConv weight grad:", model.layers[0].conv1.weight.grad)
