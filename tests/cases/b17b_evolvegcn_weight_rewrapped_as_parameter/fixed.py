"""pytorch_geometric_temporal issue #80, "[Bug?] the way to set GCN.weight in EvolveGCN".
https://github.com/benedekrozemberczki/pytorch_geometric_temporal/issues/80

What the user saw: in EvolveGCN-O the GCN weight is evolved by a GRU each forward, then put back with
`self.conv_layer.weight = torch.nn.Parameter(W)`; the gradient function is lost, so the GRU that
evolves the weights never receives a gradient (its .grad stays None) and never learns.
Why: nn.Parameter(W) makes a brand-new leaf with no history; backward stops there, so nothing
upstream (the recurrent layer, the initial weight) is reached.
Fix (the issue's MyModelParam): keep W a plain tensor and pass it to the conv as its weight.
"""
import torch

torch.manual_seed(0)


class ToyGCN(torch.nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(channels, channels) * 0.3)

    def forward(self, x, adj, weight=None):
        w = self.weight if weight is None else weight
        return adj @ (x @ w)


class EvolveGCNO(torch.nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv_layer = ToyGCN(channels)
        self.recurrent_layer = torch.nn.GRU(input_size=channels, hidden_size=channels, num_layers=1)

    def forward(self, X, adj):
        W = self.conv_layer.weight[None, :, :]
        W, _ = self.recurrent_layer(W, W)
        return self.conv_layer(X, adj, weight=W.squeeze(dim=0))


model = EvolveGCNO(4)
opt = torch.optim.Adam(model.parameters(), lr=0.01)
X, adj = torch.randn(6, 4), torch.softmax(torch.randn(6, 6), dim=1)
target = torch.randn(6, 4)
for step in range(3):
    opt.zero_grad()
    loss = ((model(X, adj) - target) ** 2).mean()
    loss.backward()
    opt.step()
print("GRU weight_ih_l0.grad norm:", model.recurrent_layer.weight_ih_l0.grad.norm().item())
