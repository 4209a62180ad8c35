"""genrl A2C (SforAiDl/genrl#426, https://github.com/SforAiDl/genrl/issues/426): "Param mixup in A2C" --
genrl/agents/deep/a2c/a2c.py builds `optimizer_policy = opt.Adam(critic_params, ...)` and
`optimizer_value = opt.Adam(actor_params, ...)`; the A2C agent never improves and its weights never change.
Why: each optimizer holds the other network. optimizer_policy.zero_grad() clears the critic, actor_loss.backward()
fills the actor's .grad, optimizer_policy.step() then steps the critic (grad None); optimizer_value.zero_grad()
erases the actor's fresh gradients before value_loss.backward(), and optimizer_value.step() steps the actor with no
gradient. Neither network is ever updated.
Fix (the issue's): give the actor's parameters to optimizer_policy and the critic's to optimizer_value."""
import torch
import torch.optim as opt
from torch import nn
from torch.distributions import Categorical
from torch.nn import functional as F


class MlpActorCritic(nn.Module):
    """genrl.core.actor_critic.MlpActorCritic in short (MlpPolicy / MlpValue heads)."""

    def __init__(self, state_dim, action_dim, policy_layers=(32, 32), value_layers=(32, 32)):
        super().__init__()
        self.actor = nn.Sequential(nn.Linear(state_dim, policy_layers[0]), nn.ReLU(), nn.Linear(policy_layers[0], action_dim))
        self.critic = nn.Sequential(nn.Linear(state_dim, value_layers[0]), nn.ReLU(), nn.Linear(value_layers[0], 1))

    def get_action(self, state, deterministic=False):
        dist = Categorical(logits=self.actor(state))
        return dist.sample(), dist

    def get_value(self, state):
        return self.critic(state).squeeze(-1)

    def get_params(self):
        actor_params = self.actor.parameters()
        critic_params = self.critic.parameters()
        return actor_params, critic_params


class A2C:
    def __init__(self, lr_policy=0.01, lr_value=0.01, value_coeff=0.5, entropy_coeff=0.01):
        self.lr_policy, self.lr_value = lr_policy, lr_value
        self.value_coeff, self.entropy_coeff = value_coeff, entropy_coeff
        self._create_model()

    def _create_model(self):
        self.ac = MlpActorCritic(4, 2)
        actor_params, critic_params = self.ac.get_params()
        self.optimizer_policy = opt.Adam(critic_params, lr=self.lr_policy)  # <- optimizer
        self.optimizer_value = opt.Adam(actor_params, lr=self.lr_value)

    def evaluate_actions(self, states, actions):
        _, dist = self.ac.get_action(states, deterministic=False)
        values = self.ac.get_value(states)
        return values, dist.log_prob(actions).cpu(), dist.entropy().cpu()

    def update_params(self, rollout):
        values, log_prob, entropy = self.evaluate_actions(rollout["observations"], rollout["actions"])

        policy_loss = rollout["advantages"] * log_prob
        policy_loss = -torch.mean(policy_loss)

        value_loss = self.value_coeff * F.mse_loss(rollout["returns"], values.cpu())

        entropy_loss = -torch.mean(entropy)  # Change this to entropy

        actor_loss = policy_loss + self.entropy_coeff * entropy_loss

        self.optimizer_policy.zero_grad()
        actor_loss.backward()
        torch.nn.utils.clip_grad_norm_(self.ac.actor.parameters(), 0.5)
        self.optimizer_policy.step()

        self.optimizer_value.zero_grad()
        value_loss.backward()
        torch.nn.utils.clip_grad_norm_(self.ac.critic.parameters(), 0.5)
        self.optimizer_value.step()


torch.manual_seed(0)
agent = A2C()
actor_before = agent.ac.actor[0].weight.detach().clone()
critic_before = agent.ac.critic[0].weight.detach().clone()
for _ in range(5):
    obs = torch.randn(16, 4)
    rollout = {"observations": obs, "actions": torch.randint(0, 2, (16,)),
               "advantages": torch.randn(16), "returns": obs.sum(1)}
    agent.update_params(rollout)
print("actor changed:", not torch.equal(actor_before, agent.ac.actor[0].weight))
print("critic changed:", not torch.equal(critic_before, agent.ac.critic[0].weight))
