"""GenRL (SforAiDl/genrl#315, https://github.com/SforAiDl/genrl/issues/315): "CNN parameters not being updated
for ACs". With network="cnn", A2C trains the actor and critic heads but the weights of the shared CNN layers
(CNNActorCritic.feature) never change.
Why: A2C._create_model builds its two optimizers from self.ac.actor.parameters() and
self.ac.critic.parameters() only. get_action/get_value run the state through self.feature first, so the CNN
gets gradients from both losses, but no optimizer holds its parameters and none steps them.
Fix: give the CNN's parameters to an optimizer too. Here the value optimizer gets feature + critic (the critic
updates the shared encoder); putting them in the policy optimizer instead makes value_loss.backward() fail,
since the policy step modifies the CNN weights its graph saved."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as opt
from torch.distributions import Categorical


def cnn(channels=(4, 16, 32), kernel_sizes=(8, 4), strides=(4, 2), in_size=84):  # genrl.core.base.cnn
    cnn_layers = []
    output_size = in_size
    for i in range(len(channels) - 1):
        in_channels, out_channels = channels[i], channels[i + 1]
        cnn_layers += [nn.Conv2d(in_channels, out_channels, kernel_size=kernel_sizes[i], stride=strides[i]),
                       nn.ReLU()]
        output_size = (output_size - kernel_sizes[i]) // strides[i] + 1
    return nn.Sequential(*cnn_layers), channels[-1] * output_size * output_size


class MlpPolicy(nn.Module):  # genrl.core.policies.MlpPolicy, shortened
    def __init__(self, state_dim, action_dim, hidden=(32,)):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(state_dim, hidden[0]), nn.ReLU(), nn.Linear(hidden[0], action_dim))

    def forward(self, x):
        return self.model(x)


class MlpValue(nn.Module):  # genrl.core.values.MlpValue, shortened
    def __init__(self, state_dim, hidden=(32,)):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(state_dim, hidden[0]), nn.ReLU(), nn.Linear(hidden[0], 1))

    def forward(self, x):
        return self.model(x)


class CNNActorCritic(nn.Module):  # genrl.core.actor_critic.CNNActorCritic
    def __init__(self, framestack, action_dim):
        super(CNNActorCritic, self).__init__()
        self.feature, output_size = cnn((framestack, 16, 32))
        self.actor = MlpPolicy(output_size, action_dim)
        self.critic = MlpValue(output_size)

    def get_action(self, state, deterministic=False):
        state = self.feature(state)
        state = state.view(state.size(0), -1)
        action_probs = self.actor(state)
        action_probs = nn.Softmax(dim=-1)(action_probs)
        distribution = Categorical(probs=action_probs)
        action = distribution.sample()
        return action, distribution

    def get_value(self, inp):
        inp = self.feature(inp)
        inp = inp.view(inp.size(0), -1)
        value = self.critic(inp).squeeze(-1)
        return value


class A2C:  # genrl.agents.deep.a2c.a2c.A2C
    def __init__(self, framestack=4, action_dim=3, lr_policy=0.01, lr_value=0.01):
        self.lr_policy, self.lr_value = lr_policy, lr_value
        self.value_coeff, self.entropy_coeff = 0.5, 0.01
        self.ac = CNNActorCritic(framestack, action_dim)
        self.optimizer_policy = opt.Adam(self.ac.actor.parameters(), lr=self.lr_policy)
        self.optimizer_value = opt.Adam([*self.ac.feature.parameters(), *self.ac.critic.parameters()], lr=self.lr_value)

    def evaluate_actions(self, states, actions):
        _, dist = self.ac.get_action(states, deterministic=False)
        values = self.ac.get_value(states)
        return values, dist.log_prob(actions).cpu(), dist.entropy().cpu()

    def update_params(self, observations, actions, advantages, returns):
        values, log_prob, entropy = self.evaluate_actions(observations, actions)
        policy_loss = advantages * log_prob
        policy_loss = -torch.mean(policy_loss)
        value_loss = self.value_coeff * F.mse_loss(returns, values.cpu())
        entropy_loss = -torch.mean(entropy)
        actor_loss = policy_loss + self.entropy_coeff * entropy_loss

        self.optimizer_policy.zero_grad()
        actor_loss.backward()
        torch.nn.utils.clip_grad_norm_(self.ac.actor.parameters(), 0.5)
        self.optimizer_policy.step()

        self.optimizer_value.zero_grad()
        value_loss.backward()
        torch.nn.utils.clip_grad_norm_(self.ac.critic.parameters(), 0.5)
        self.optimizer_value.step()
        return policy_loss.item(), value_loss.item()


torch.manual_seed(0)
agent = A2C()
before = agent.ac.feature[0].weight.detach().clone()
for step in range(3):
    observations = torch.rand(8, 4, 84, 84)
    actions = torch.randint(0, 3, (8,))
    advantages, returns = torch.randn(8), torch.randn(8)
    print(step, agent.update_params(observations, actions, advantages, returns))
print("CNN grad is None:", agent.ac.feature[0].weight.grad is None)
print("CNN weights changed:", not torch.equal(before, agent.ac.feature[0].weight))
