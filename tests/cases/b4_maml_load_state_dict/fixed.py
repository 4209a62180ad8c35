"""The fixed twin: the query loss evaluates the network at the fast weights with
torch.func.functional_call, so it stays a function of the meta-parameters."""
import copy
import torch
from torch import nn
import torch.nn.functional as F

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))
meta_optim = torch.optim.Adam(net.parameters(), lr=1e-3)
update_lr = 0.01
tasks = [(torch.randn(5, 1), torch.randn(5, 1), torch.randn(5, 1), torch.randn(5, 1)) for _ in range(2)]
for epoch in range(2):
    losses_q = 0
    for x_spt, y_spt, x_qry, y_qry in tasks:
        loss = F.mse_loss(net(x_spt), y_spt)
        grad = torch.autograd.grad(loss, net.parameters(), create_graph=True)
        fast_weights = {name: p - update_lr * g for (name, p), g in zip(net.named_parameters(), grad)}
        logits_q = torch.func.functional_call(net, fast_weights, (x_qry,))
        losses_q = losses_q + F.mse_loss(logits_q, y_qry)
    meta_optim.zero_grad()
    losses_q.backward()
    meta_optim.step()
    print(f"epoch {epoch}: query loss {losses_q.item():.4f} meta grad {net[0].weight.grad.norm():.6f}")
