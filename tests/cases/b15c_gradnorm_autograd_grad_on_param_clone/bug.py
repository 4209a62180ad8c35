"""GradNorm for multi-task learning (hosseinshn/GradNorm#10, https://github.com/hosseinshn/GradNorm/issues/10): the
user's port computes the gradient norm of each weighted task loss w.r.t. the first shared layer's weight with
`torch.autograd.grad(L1, param[0].clone(), retain_graph=True, create_graph=True)`. The clone is a new tensor made
after the forward pass, so L1 never used it and autograd raises "One of the differentiated Tensors appears to not
have been used in the graph"; allow_unused=True would only return None. The repository's GradNorm differentiates
w.r.t. `param[0]` itself; that is the fix."""
import torch
from torch import nn

torch.manual_seed(0)
feature_size, shared_layer_size, tower_h1, output_size = 20, 16, 8, 1
LR, alph = 1e-3, 0.16


class MTLnet(nn.Module):
    def __init__(self):
        super().__init__()
        self.sharedlayer = nn.Sequential(nn.Linear(feature_size, shared_layer_size), nn.ReLU())
        self.tower1 = nn.Sequential(nn.Linear(shared_layer_size, tower_h1), nn.ReLU(), nn.Linear(tower_h1, output_size))
        self.tower2 = nn.Sequential(nn.Linear(shared_layer_size, tower_h1), nn.ReLU(), nn.Linear(tower_h1, output_size))

    def forward(self, x):
        h_shared = self.sharedlayer(x)
        return self.tower1(h_shared), self.tower2(h_shared)


X = torch.randn(64, feature_size)
Y1, Y2 = X[:, :3].sum(1, keepdim=True), torch.sin(X[:, 3:6].sum(1, keepdim=True))
Weightloss1 = torch.tensor([1.0], requires_grad=True)
Weightloss2 = torch.tensor([1.0], requires_grad=True)
params = [Weightloss1, Weightloss2]
MTL = MTLnet()
opt1 = torch.optim.Adam(MTL.parameters(), lr=LR)
opt2 = torch.optim.Adam(params, lr=LR)
loss_func, Gradloss = nn.MSELoss(), nn.L1Loss()

for it in range(3):
    out1, out2 = MTL(X)
    l1 = params[0] * loss_func(out1, Y1)
    l2 = params[1] * loss_func(out2, Y2)
    loss = torch.div(torch.add(l1, l2), 2)
    if it == 0:
        l01, l02 = l1.data, l2.data
    opt1.zero_grad()
    loss.backward(retain_graph=True)
    param = list(MTL.parameters())
    G1R = torch.autograd.grad(l1, param[0].clone(), retain_graph=True, create_graph=True)  # <- autograd_error
    G1 = torch.norm(G1R[0], 2)
    G2R = torch.autograd.grad(l2, param[0].clone(), retain_graph=True, create_graph=True)
    G2 = torch.norm(G2R[0], 2)
    G_avg = torch.div(torch.add(G1, G2), 2)
    lhat1, lhat2 = torch.div(l1, l01), torch.div(l2, l02)
    lhat_avg = torch.div(torch.add(lhat1, lhat2), 2)
    C1 = (G_avg * torch.div(lhat1, lhat_avg) ** alph).detach().squeeze()
    C2 = (G_avg * torch.div(lhat2, lhat_avg) ** alph).detach().squeeze()
    opt2.zero_grad()
    Lgrad = torch.add(Gradloss(G1, C1), Gradloss(G2, C2))
    Lgrad.backward()
    opt2.step()
    opt1.step()
    print(f"iter {it}: loss {loss.item():.4f} weights {Weightloss1.item():.4f} {Weightloss2.item():.4f}")
