# Report: "Bug fix" (OML / MRCL, Meta-Learning Representations for Continual Learning)
# URL: https://github.com/kjaved0/mrcl/issues/15  (repo now khurramjaved96/mrcl)
# What went wrong: MetaLearingClassification.inner_update() computed the inner-loop
#   gradient with torch.autograd.grad(loss, fast_weights) and no create_graph, so the
#   gradient g used in the fast weights p - lr * g is a constant. The meta-loss on the
#   random (x_rand) batch then never back-propagates through the inner updates: the
#   representation network (RLN, learn=False, fixed in the inner loop) only receives the
#   first-order term of its meta-gradient, i.e. the code silently ran first-order OML.
# Fix (author's answer in the issue): compute the inner gradient with create_graph=True,
#   and only for the adaptation (PLN) parameters to keep it fast:
#   torch.autograd.grad(loss, self.net.get_adaptation_parameters(fast_weights), create_graph=True)
# The Learner below is a reduced, functional-forward copy of model/learner.py.
import torch
from torch import nn, optim
from torch.nn import functional as F

torch.manual_seed(0)


class Learner(nn.Module):
    """Functional MLP: RLN (two layers, fixed in the inner loop) + PLN (classifier)."""

    def __init__(self, config):
        super(Learner, self).__init__()
        self.config = config
        self.vars = nn.ParameterList()
        for name, (out_dim, in_dim), learn in config:
            w = nn.Parameter(torch.empty(out_dim, in_dim))
            torch.nn.init.kaiming_normal_(w)
            b = nn.Parameter(torch.zeros(out_dim))
            w.learn = learn
            b.learn = learn
            self.vars.append(w)
            self.vars.append(b)

    def forward(self, x, vars=None, bn_training=True):
        if vars is None:
            vars = self.vars
        idx = 0
        for i, (name, _, _) in enumerate(self.config):
            w, b = vars[idx], vars[idx + 1]
            x = F.linear(x, w, b)
            if i < len(self.config) - 1:
                x = F.relu(x)
            idx += 2
        return x

    def get_adaptation_parameters(self, vars=None):
        if vars is None:
            vars = self.vars
        return [p for p in vars if p.learn]

    def parameters(self):
        return self.vars


class MetaLearingClassification(nn.Module):

    def __init__(self, update_lr, meta_lr, update_step, config):
        super(MetaLearingClassification, self).__init__()
        self.update_lr = update_lr
        self.meta_lr = meta_lr
        self.update_step = update_step
        self.net = Learner(config)
        self.optimizer = optim.Adam(self.net.parameters(), lr=self.meta_lr)

    def inner_update(self, x, fast_weights, y, bn_training):
        logits = self.net(x, fast_weights, bn_training=bn_training)
        loss = F.cross_entropy(logits, y)
        if fast_weights is None:
            fast_weights = self.net.parameters()
        #
        grad = torch.autograd.grad(loss, self.net.get_adaptation_parameters(fast_weights), create_graph=True)

        adaptation_weight_counter = 0
        new_weights = []
        for p in fast_weights:
            if p.learn:
                new_weights.append(p - self.update_lr * grad[adaptation_weight_counter])
                adaptation_weight_counter += 1
            else:
                new_weights.append(p)
        fast_weights = new_weights

        for params_old, params_new in zip(self.net.parameters(), fast_weights):
            params_new.learn = params_old.learn

        return fast_weights

    def meta_loss(self, x, fast_weights, y, bn_training):
        logits = self.net(x, fast_weights, bn_training=bn_training)
        loss_q = F.cross_entropy(logits, y)
        return loss_q, logits

    def forward(self, x_traj, y_traj, x_rand, y_rand):
        meta_losses = [0 for _ in range(self.update_step + 1)]

        # Doing a single inner update to get updated weights
        fast_weights = self.inner_update(x_traj[0], None, y_traj[0], True)

        with torch.no_grad():
            meta_loss, _ = self.meta_loss(x_rand[0], self.net.parameters(), y_rand[0], False)
            meta_losses[0] += meta_loss
            meta_loss, _ = self.meta_loss(x_rand[0], fast_weights, y_rand[0], False)
            meta_losses[1] += meta_loss

        for k in range(1, self.update_step):
            # Doing inner updates using fast weights
            fast_weights = self.inner_update(x_traj[k], fast_weights, y_traj[k], True)
            # Computing meta-loss with respect to latest weights
            meta_loss, logits = self.meta_loss(x_rand[0], fast_weights, y_rand[0], False)
            meta_losses[k + 1] += meta_loss

        # Taking the meta gradient step
        self.optimizer.zero_grad()
        meta_loss = meta_losses[-1]
        meta_loss.backward()
        self.optimizer.step()
        return meta_losses


IN_DIM, HID, N_CLASSES, UPDATE_STEP = 32, 64, 5, 5
config = [
    ("linear", (HID, IN_DIM), False),   # RLN (meta-learned representation)
    ("linear", (HID, HID), False),      # RLN
    ("linear", (N_CLASSES, HID), True),  # PLN (adapted in the inner loop)
]
maml = MetaLearingClassification(update_lr=0.03, meta_lr=1e-3, update_step=UPDATE_STEP, config=config)

for it in range(10):
    # one trajectory: UPDATE_STEP single-class batches, plus a random batch for the meta-loss
    classes = torch.randperm(N_CLASSES)
    y_traj = classes.view(-1, 1).repeat(1, 4)
    x_traj = torch.randn(UPDATE_STEP, 4, IN_DIM) + y_traj.unsqueeze(-1).float()
    y_rand = torch.randint(0, N_CLASSES, (1, 20))
    x_rand = torch.randn(1, 20, IN_DIM) + y_rand.unsqueeze(-1).float()
    meta_losses = maml(x_traj, y_traj, x_rand, y_rand)

rln_w = maml.net.parameters()[0]
print("final meta loss:", meta_losses[-1].item())
print("RLN layer-0 meta-grad norm:", rln_w.grad.norm().item())
