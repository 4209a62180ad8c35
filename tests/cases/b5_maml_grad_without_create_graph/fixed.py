"""The fixed twin: the inner gradient keeps its graph (create_graph=True), so the meta-gradient is
second order."""
import torch
import torch.nn.functional as F
from torch import nn


def net(x, vars):
    x = F.relu(F.linear(x, vars[0], vars[1]))
    return F.linear(x, vars[2], vars[3])


torch.manual_seed(0)
meta_params = nn.ParameterList([nn.Parameter(torch.randn(16, 4) * 0.5), nn.Parameter(torch.zeros(16)),
                                nn.Parameter(torch.randn(3, 16) * 0.5), nn.Parameter(torch.zeros(3))])
meta_optim = torch.optim.Adam(meta_params.parameters(), lr=1e-3)
update_lr, task_num = 0.4, 2
tasks = [(torch.randn(6, 4), torch.randint(0, 3, (6,)), torch.randn(6, 4), torch.randint(0, 3, (6,)))
         for _ in range(task_num)]
for step in range(3):
    losses_q = 0
    for x_spt, y_spt, x_qry, y_qry in tasks:
        logits = net(x_spt, list(meta_params))
        loss = F.cross_entropy(logits, y_spt)
        grad = torch.autograd.grad(loss, list(meta_params), create_graph=True)
        fast_weights = list(map(lambda p: p[1] - update_lr * p[0], zip(grad, meta_params)))
        logits_q = net(x_qry, fast_weights)
        losses_q = losses_q + F.cross_entropy(logits_q, y_qry)
    loss_q = losses_q / task_num
    meta_optim.zero_grad()
    loss_q.backward()
    meta_optim.step()
    print(f"step {step}: query loss {loss_q.item():.4f}")
