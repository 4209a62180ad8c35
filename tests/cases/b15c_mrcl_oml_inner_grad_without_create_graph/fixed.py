"""OML / MRCL meta-learning (kjaved0/mrcl#15, https://github.com/kjaved0/mrcl/issues/15): the inner loop adapts the
prediction network (PLN) on a trajectory with `grad = torch.autograd.grad(loss, fast_weights)` and the meta loss is
computed with the adapted fast weights. Without create_graph=True the inner gradients are constants, so the meta
gradient ignores how each inner update depends on the representation network (RLN) and on the slow PLN weights:
the code silently trains first-order only. The author confirmed the bug; the fix is
`torch.autograd.grad(loss, adaptation_params, create_graph=True)` (and only over the PLN weights adapted inside)."""
import torch
import torch.nn.functional as F
from torch import nn


class Learner(nn.Module):
    """RLN (meta-learned representation, fixed in the inner loop) + PLN (adapted in the inner loop)."""

    def __init__(self, in_dim=10, hid=32, n_classes=5):
        super().__init__()
        self.vars = nn.ParameterList([
            nn.Parameter(torch.randn(hid, in_dim) * 0.3), nn.Parameter(torch.zeros(hid)),        # RLN
            nn.Parameter(torch.randn(n_classes, hid) * 0.3), nn.Parameter(torch.zeros(n_classes)),  # PLN
        ])
        for i, p in enumerate(self.vars):
            p.learn = i >= 2

    def forward(self, x, vars=None):
        w1, b1, w2, b2 = self.vars if vars is None else vars
        h = F.relu(F.linear(x, w1, b1))
        return F.linear(h, w2, b2)


class MetaLearingClassification(nn.Module):
    def __init__(self, update_lr=0.1, meta_lr=1e-3, update_step=3):
        super().__init__()
        self.update_lr, self.update_step = update_lr, update_step
        self.net = Learner()
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=meta_lr)

    def inner_update(self, x, fast_weights, y):
        logits = self.net(x, fast_weights)
        loss = F.cross_entropy(logits, y)
        grad = torch.autograd.grad(loss, fast_weights, create_graph=True)
        fast_weights = [p - self.update_lr * g if p.learn else p for p, g in zip(fast_weights, grad)]
        for p_new, p_old in zip(fast_weights, self.net.vars):
            p_new.learn = p_old.learn
        return fast_weights, grad

    def forward(self, x_traj, y_traj, x_rand, y_rand):
        fast_weights = list(self.net.parameters())
        for k in range(self.update_step):
            fast_weights, grad = self.inner_update(x_traj[k], fast_weights, y_traj[k])
        meta_loss = F.cross_entropy(self.net(x_rand, fast_weights), y_rand)
        self.optimizer.zero_grad()
        meta_loss.backward()
        self.optimizer.step()
        return meta_loss.item(), grad


torch.manual_seed(0)
maml = MetaLearingClassification()
for step in range(3):
    x_traj, y_traj = torch.randn(3, 8, 10), torch.randint(0, 5, (3, 8))
    x_rand, y_rand = torch.randn(16, 10), torch.randint(0, 5, (16,))
    loss, grad = maml(x_traj, y_traj, x_rand, y_rand)
    print(f"meta step {step}: meta loss {loss:.4f}")
print("inner-loop gradients carry a graph (second order):", grad[2].requires_grad)
