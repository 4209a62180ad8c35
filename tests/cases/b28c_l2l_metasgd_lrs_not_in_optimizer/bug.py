"""learn2learn issue #167 "Meta-SGD - Learning rate alpha not changing",
https://github.com/learnables/learn2learn/issues/167 (fixed by PR #168 "fix: \\alpha is now learned in Meta-SGD"):
running the examples/rl/metasgd_a2c.py example, the reporter printed `meta_learner.lrs.state_dict()['0']` at the
end of every outer iteration and saw the per-parameter inner learning rates (alpha) never change.
Why: the example built the meta-optimizer from `policy.parameters()` only, while the learnable learning rates live
on the MetaSGD wrapper (`meta_learner.lrs`). The second-order adaptation gives them a gradient at every
`adaptation_loss.backward()`, but no optimizer holds them, so `opt.step()` never moves them.
Fix (the example after PR #168): `opt = optim.Adam(meta_learner.parameters(), lr=meta_lr)`.
MetaSGD is written by hand here (learn2learn is not installed): a clone keeps the policy's parameters as a dict
with history, `adapt` takes `p - lr * g` with gradients from `autograd.grad(create_graph=True)`, and the policy is
run with `torch.func.functional_call`. The particle environment is replaced by generated episodes."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim
from torch.func import functional_call

torch.set_num_threads(1)


class DiagNormalPolicy(nn.Module):
    def __init__(self, input_size, output_size, hidden=32):
        super().__init__()
        self.mean = nn.Sequential(nn.Linear(input_size, hidden), nn.ReLU(), nn.Linear(hidden, output_size))
        self.sigma = nn.Parameter(torch.ones(output_size))

    def forward(self, state, action):  # log_prob of the actions taken
        dist = torch.distributions.Normal(self.mean(state), F.softplus(self.sigma))
        return dist.log_prob(action).mean(dim=1, keepdim=True)


class MetaSGDLearner:
    def __init__(self, module, params, lrs):
        self.module, self.params, self.lrs = module, params, lrs

    def log_prob(self, states, actions):
        return functional_call(self.module, self.params, (states, actions))

    def adapt(self, loss):
        gradients = torch.autograd.grad(loss, list(self.params.values()), create_graph=True)
        self.params = {name: p - lr * g
                       for (name, p), lr, g in zip(self.params.items(), self.lrs, gradients)}


class MetaSGD(nn.Module):
    def __init__(self, model, lr=1.0):
        super().__init__()
        self.module = model
        self.lrs = nn.ParameterList([nn.Parameter(torch.ones_like(p) * lr) for p in model.parameters()])

    def clone(self):
        return MetaSGDLearner(self.module, dict(self.module.named_parameters()), [lr.clone() for lr in self.lrs])


def sample_episodes(goal, n=20):
    states = torch.randn(n, 2)
    actions = torch.randn(n, 2)
    rewards = -(states + actions - goal).norm(dim=1, keepdim=True)
    return states, actions, rewards


def maml_a2c_loss(episodes, learner):
    states, actions, rewards = episodes
    log_probs = learner.log_prob(states, actions)
    advantages = ((rewards - rewards.mean()) / (rewards.std() + 1e-8)).detach()
    return -(log_probs * advantages).mean()


torch.manual_seed(0)
meta_lr, adapt_steps, meta_bsz = 0.01, 1, 4
policy = DiagNormalPolicy(2, 2)
meta_learner = MetaSGD(policy, lr=meta_lr)
opt = optim.Adam(policy.parameters(), lr=meta_lr)  # <- optimizer
lrs_before = meta_learner.lrs[0].detach().clone()

for iteration in range(5):
    iteration_loss = 0.0
    for task in range(meta_bsz):
        goal = torch.randn(2)
        learner = meta_learner.clone()
        for step in range(adapt_steps):  # Fast Adapt
            loss = maml_a2c_loss(sample_episodes(goal), learner)
            learner.adapt(loss)
        loss = maml_a2c_loss(sample_episodes(goal), learner)  # Compute Validation Loss
        iteration_loss += loss
    adaptation_loss = iteration_loss / meta_bsz
    opt.zero_grad()
    adaptation_loss.backward()
    opt.step()

print("lrs[0].grad is None:", meta_learner.lrs[0].grad is None)
print("lrs changed:", not torch.equal(lrs_before, meta_learner.lrs.state_dict()["0"]))
