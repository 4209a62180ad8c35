"""uvm-neurobotics-lab/ANML issue #3 "FIrst order gradients are used for outer loop optimization",
https://github.com/uvm-neurobotics-lab/ANML/issues/3: ANML (A Neuromodulated Meta-Learning algorithm, built on
OML's code) adapts the prediction network in the inner loop with
`grad = torch.autograd.grad(loss, fast_weights, allow_unused=False)` and takes `p - update_lr * g`. The
reporter points out that without `create_graph=True` the gradients are constants, so the meta-gradient never
flows back through the inner updates: only the first-order approximation trains the meta-parameters, most
notably the neuromodulatory network (fixed in the inner loop), which then learns only from how it gates the
query forward, not from how it shapes the inner-loop learning. OML's author confirmed the same bug in the code
ANML copied (kjaved0/mrcl#15) and that fixing it "significantly decreases the time to convergence". The issue
had no reply from the ANML authors.
Fix: `torch.autograd.grad(loss, fast_weights, allow_unused=False, create_graph=True)`.
The Learner below is a small functional MLP with a neuromodulation gate instead of ANML's conv nets; the
Omniglot trajectories are generated."""
import torch
import torch.nn.functional as F
from torch import nn, optim

torch.set_num_threads(1)


class Learner(nn.Module):
    def __init__(self, n_in=20, hidden=32, n_classes=5):
        super().__init__()
        self.vars = nn.ParameterList()
        for shape, learn in [((hidden, n_in), False), ((hidden,), False),      # neuromodulatory network
                             ((hidden, n_in), True), ((hidden,), True),        # prediction network
                             ((n_classes, hidden), True), ((n_classes,), True)]:
            p = nn.Parameter(torch.randn(shape) * 0.3)
            p.learn = learn
            self.vars.append(p)

    def forward(self, x, vars=None):
        if vars is None:
            vars = self.vars
        nm = torch.sigmoid(F.linear(x, vars[0], vars[1]))
        h = F.relu(F.linear(x, vars[2], vars[3])) * nm
        return F.linear(h, vars[4], vars[5])

    def parameters(self):
        return list(self.vars)


class MetaLearingClassification(nn.Module):
    def __init__(self, update_lr=0.1, meta_lr=1e-3, update_step=5):
        super().__init__()
        self.update_lr, self.update_step = update_lr, update_step
        self.net = Learner()
        self.optimizer = optim.Adam(self.net.parameters(), lr=meta_lr)

    def inner_update(self, x, fast_weights, y):
        logits = self.net(x, fast_weights)
        loss = F.cross_entropy(logits, y)
        if fast_weights is None:
            fast_weights = self.net.parameters()
        grad = torch.autograd.grad(loss, fast_weights, allow_unused=False, create_graph=True)
        fast_weights = list(
            map(lambda p: p[1] - self.update_lr * p[0] if p[1].learn else p[1], zip(grad, fast_weights)))
        for params_old, params_new in zip(self.net.parameters(), fast_weights):
            params_new.learn = params_old.learn
        return fast_weights, grad

    def forward(self, x_traj, y_traj, x_rand, y_rand):
        fast_weights, grad = self.inner_update(x_traj[0], None, y_traj[0])
        for k in range(1, self.update_step):
            fast_weights, grad = self.inner_update(x_traj[k], fast_weights, y_traj[k])
        meta_loss = F.cross_entropy(self.net(x_rand, fast_weights), y_rand)
        self.net.zero_grad()
        meta_loss.backward()
        self.optimizer.step()
        return meta_loss, grad


torch.manual_seed(0)
maml = MetaLearingClassification()
for it in range(5):
    x_traj = torch.randn(5, 4, 20)
    y_traj = torch.arange(5).repeat_interleave(4).view(5, 4)  # one class per inner step
    x_rand, y_rand = torch.randn(20, 20), torch.randint(0, 5, (20,))
    meta_loss, grad = maml(x_traj, y_traj, x_rand, y_rand)

print("inner-loop gradients carry a graph:", grad[2].requires_grad)
print("meta-gradient norm of the neuromodulatory weight:", maml.net.vars[0].grad.norm().item())
