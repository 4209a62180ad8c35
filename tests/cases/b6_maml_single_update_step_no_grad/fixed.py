"""The fixed twin: the query loss after the first update is computed with its graph, so the meta loss trains
the initial weights whatever update_step is."""
import torch
import torch.nn.functional as F
from torch import nn


class Learner(nn.Module):
    def __init__(self):
        super().__init__()
        self.vars = nn.ParameterList([nn.Parameter(torch.randn(5, 6) * 0.3), nn.Parameter(torch.zeros(5))])

    def forward(self, x, vars=None):
        w, b = self.vars if vars is None else vars
        return F.linear(x, w, b)


class Meta(nn.Module):
    def __init__(self, update_lr=0.4, meta_lr=1e-3, update_step=1):
        super().__init__()
        self.update_lr, self.update_step = update_lr, update_step
        self.net = Learner()
        self.meta_optim = torch.optim.Adam(self.net.parameters(), lr=meta_lr)

    def forward(self, x_spt, y_spt, x_qry, y_qry):
        task_num = x_spt.size(0)
        losses_q = [0 for _ in range(self.update_step + 1)]
        for i in range(task_num):
            logits = self.net(x_spt[i])
            loss = F.cross_entropy(logits, y_spt[i])
            grad = torch.autograd.grad(loss, self.net.parameters(), create_graph=True)
            fast_weights = list(map(lambda p: p[1] - self.update_lr * p[0], zip(grad, self.net.parameters())))
            with torch.no_grad():
                logits_q = self.net(x_qry[i], self.net.parameters())
                losses_q[0] += F.cross_entropy(logits_q, y_qry[i])
            logits_q = self.net(x_qry[i], fast_weights)
            losses_q[1] += F.cross_entropy(logits_q, y_qry[i])
            for k in range(1, self.update_step):
                loss = F.cross_entropy(self.net(x_spt[i], fast_weights), y_spt[i])
                grad = torch.autograd.grad(loss, fast_weights, create_graph=True)
                fast_weights = list(map(lambda p: p[1] - self.update_lr * p[0], zip(grad, fast_weights)))
                losses_q[k + 1] += F.cross_entropy(self.net(x_qry[i], fast_weights), y_qry[i])
        loss_q = losses_q[-1] / task_num
        self.meta_optim.zero_grad()
        loss_q.backward()
        self.meta_optim.step()
        return loss_q.item()


torch.manual_seed(0)
maml = Meta(update_step=1)
x_spt, y_spt = torch.randn(2, 5, 6), torch.randint(0, 5, (2, 5))
x_qry, y_qry = torch.randn(2, 15, 6), torch.randint(0, 5, (2, 15))
for step in range(3):
    print(f"step {step}: meta loss {maml(x_spt, y_spt, x_qry, y_qry):.4f}")
