"""MAML with an unrolled inner loop in the style of higher's innerloop_ctx (facebookresearch/higher#30): with
copy_initial_weights=True the inner loop starts from detached copies of the network's weights, so the query loss
reaches only the copies; meta_opt.step() finds no gradient on the network and the meta-parameters never change.
The functional inner loop is reduced to plain torch."""
import torch
import torch.nn.functional as F
from torch import nn


def functional_forward(x, params):
    h = F.relu(F.linear(x, params[0], params[1]))
    return F.linear(h, params[2], params[3])


def innerloop(net, x_spt, y_spt, n_inner_iter=3, inner_lr=0.1, copy_initial_weights=True):
    if copy_initial_weights:
        fast = [p.detach().clone().requires_grad_() for p in net.parameters()]  # <- detach
    else:
        fast = list(net.parameters())
    for _ in range(n_inner_iter):
        spt_loss = F.cross_entropy(functional_forward(x_spt, fast), y_spt)
        grads = torch.autograd.grad(spt_loss, fast, create_graph=True)
        fast = [w - inner_lr * g for w, g in zip(fast, grads)]
    return fast


torch.manual_seed(0)
net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 5))
meta_opt = torch.optim.Adam(net.parameters(), lr=1e-3)
before = net[0].weight.detach().clone()
for it in range(5):
    meta_opt.zero_grad()
    for task in range(4):
        x_spt, y_spt = torch.randn(10, 8), torch.randint(0, 5, (10,))
        x_qry, y_qry = torch.randn(15, 8), torch.randint(0, 5, (15,))
        fast = innerloop(net, x_spt, y_spt)
        qry_loss = F.cross_entropy(functional_forward(x_qry, fast), y_qry)
        qry_loss.backward()
    meta_opt.step()
print(f"query loss {qry_loss.item():.4f}; meta-parameters changed: {not torch.equal(before, net[0].weight)}")
