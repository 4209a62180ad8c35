"""ray-project/ray#11294, "[rllib] SAC (pytorch) log_alpha not optimizing with GPU enabled": in RLlib's torch SAC
the model keeps its entropy coefficient as a plain tensor attribute, `self.log_alpha = torch.tensor([log(a0)],
requires_grad=True)`, not a registered parameter; the policy builds `alpha_optim = Adam([model.log_alpha])`, and
only then `setup_late_mixins` moves it, `policy.model.log_alpha = policy.model.log_alpha.to(policy.device)`. On a
GPU that is a copy: the loss and the stats use the copy, the optimizer steps the original, so the alpha the agent
uses (and logs) never changes. The reporter's analysis; the fix (PR #11298) registers log_alpha as an
nn.Parameter of the model, so moving the model moves it in place, and drops the reassignment. On this CPU run
`copy=True` stands in for the CPU-to-GPU copy."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class SACTorchModel(nn.Module):
    def __init__(self, obs_dim=4, act_dim=2, initial_alpha=1.0):
        super().__init__()
        self.action_model = nn.Sequential(nn.Linear(obs_dim, 32), nn.ReLU(), nn.Linear(32, 2 * act_dim))
        self.q_net = nn.Sequential(nn.Linear(obs_dim + act_dim, 32), nn.ReLU(), nn.Linear(32, 1))
        self.log_alpha = torch.tensor([math.log(initial_alpha)], dtype=torch.float32, requires_grad=True)  # <- non_parameter_tensor
        self.target_entropy = torch.tensor([-float(act_dim)])

    def policy_output(self, obs):
        mean, log_std = self.action_model(obs).chunk(2, dim=-1)
        return torch.distributions.Normal(mean, log_std.clamp(-5, 2).exp())


class Policy:
    def __init__(self, device):
        self.device = device
        self.model = SACTorchModel().to(device)
        # optimizer_fn
        self.actor_optim = torch.optim.Adam(self.model.action_model.parameters(), lr=3e-4)
        self.critic_optim = torch.optim.Adam(self.model.q_net.parameters(), lr=3e-4)
        self.alpha_optim = torch.optim.Adam([self.model.log_alpha], lr=3e-2)
        # setup_late_mixins (after_init)
        self.model.log_alpha = self.model.log_alpha.to(self.device, copy=True)
        self.model.target_entropy = self.model.target_entropy.to(self.device)

    def learn_on_batch(self, obs, actions, rewards):
        model = self.model
        dist = model.policy_output(obs)
        policy_t = dist.rsample()
        log_pis_t = dist.log_prob(policy_t).sum(-1, keepdim=True)
        alpha = torch.exp(model.log_alpha)
        q_t = model.q_net(torch.cat([obs, actions], -1))
        critic_loss = F.mse_loss(q_t, rewards)
        q_pi = model.q_net(torch.cat([obs, policy_t], -1))
        actor_loss = (alpha.detach() * log_pis_t - q_pi).mean()
        alpha_loss = -torch.mean(model.log_alpha * (log_pis_t + model.target_entropy).detach())
        for opt, loss in ((self.actor_optim, actor_loss), (self.critic_optim, critic_loss),
                          (self.alpha_optim, alpha_loss)):
            opt.zero_grad()
            loss.backward(retain_graph=True)
            opt.step()
        return {"alpha_value": torch.exp(model.log_alpha).item()}


policy = Policy(torch.device("cpu"))
for it in range(30):
    obs = torch.randn(64, 4)
    actions = torch.rand(64, 2) * 2 - 1
    rewards = -(actions ** 2).sum(-1, keepdim=True)
    stats = policy.learn_on_batch(obs, actions, rewards)
    if it % 10 == 0 or it == 29:
        print(f"iter {it}: alpha_value {stats['alpha_value']:.6f}")
