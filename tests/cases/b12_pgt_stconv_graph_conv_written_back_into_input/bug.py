"""PyTorch Geometric Temporal's STConv block (benedekrozemberczki/pytorch_geometric_temporal#57, STGCN traffic
forecasting): after the first temporal convolution the block runs the Chebyshev graph convolution per sample and per
time step and writes each result back into the tensor it reads from, `T[b][t] = self._graph_conv(T[b][t], ...)`;
the graph convolution saved its input slice for backward, the next write bumps the version of the shared tensor,
and backward fails with "one of the variables needed for gradient computation has been modified by an inplace
operation: [torch.FloatTensor [20, 64]], which is output 0 of SelectBackward, is at version 60; expected version 59".
The fix writes into a new tensor, `T = torch.zeros_like(T_0)`, and reads `T_0[b][t]`."""
import torch
import torch.nn.functional as F
from torch import nn


class ChebConv(nn.Module):  # K = 2 Chebyshev graph convolution on a dense scaled Laplacian
    def __init__(self, c_in, c_out, L_hat):
        super().__init__()
        self.lins = nn.ModuleList([nn.Linear(c_in, c_out, bias=False) for _ in range(2)])
        self.bias = nn.Parameter(torch.zeros(c_out))
        self.register_buffer("L_hat", L_hat)

    def forward(self, x):
        return self.lins[0](x) + self.lins[1](self.L_hat @ x) + self.bias


class TemporalConv(nn.Module):
    def __init__(self, c_in, c_out, k=3):
        super().__init__()
        self.conv_1, self.conv_2, self.conv_3 = (nn.Conv2d(c_in, c_out, (1, k)) for _ in range(3))

    def forward(self, X):  # (batch, time, nodes, channels)
        X = X.permute(0, 3, 2, 1)
        H = F.relu(self.conv_1(X) + torch.sigmoid(self.conv_2(X)) + self.conv_3(X))
        return H.permute(0, 3, 2, 1)


class STConv(nn.Module):
    def __init__(self, num_nodes, c_in, hidden, c_out, L_hat):
        super().__init__()
        self._temporal_conv1 = TemporalConv(c_in, hidden)
        self._graph_conv = ChebConv(hidden, hidden, L_hat)
        self._temporal_conv2 = TemporalConv(hidden, c_out)
        self._batch_norm = nn.BatchNorm2d(num_nodes)

    def forward(self, X):
        T = self._temporal_conv1(X)
        for b in range(T.size(0)):
            for t in range(T.size(1)):
                T[b][t] = self._graph_conv(T[b][t])  # <- inplace_saved
        T = self._temporal_conv2(F.relu(T))
        return self._batch_norm(T.permute(0, 2, 1, 3)).permute(0, 2, 1, 3)


torch.manual_seed(0)
num_nodes = 20
A = (torch.rand(num_nodes, num_nodes) < 0.2).float()
A = ((A + A.T) > 0).float()
deg = A.sum(1).clamp(min=1)
L_hat = -A / torch.sqrt(deg[:, None] * deg[None, :])  # scaled Laplacian with lambda_max = 2: L - I
model = STConv(num_nodes, c_in=2, hidden=16, c_out=8, L_hat=L_hat)
head = nn.Linear(8, 1)
optimizer = torch.optim.Adam(list(model.parameters()) + list(head.parameters()), lr=1e-3)
X, y = torch.randn(4, 12, num_nodes, 2), torch.randn(4, 8, num_nodes, 1)  # 12 steps in, 8 out
for epoch in range(2):
    loss = F.mse_loss(head(model(X)), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
