# Imagination-Augmented Agent (I2A) training loop, after higgsfield/Imagination-Augmented-Agents
# "4.imagination-augmented agent": a small distilled policy (the compressed student) is trained
# to imitate the I2A agent's action distribution, and is used inside the imagination core to pick
# the imagined actions.  After distil_loss.backward() the loop steps the main optimizer again.
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

torch.manual_seed(0)
state_dim, num_actions, num_steps, num_envs = 8, 4, 5, 3


class OnPolicy(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(state_dim, hidden), nn.ReLU())
        self.actor = nn.Linear(hidden, num_actions)
        self.critic = nn.Linear(hidden, 1)

    def forward(self, x):
        h = self.features(x)
        return self.actor(h), self.critic(h)

    def act(self, x):
        logit, _ = self(x)
        return torch.multinomial(F.softmax(logit, dim=1), 1)

    def evaluate_actions(self, x, action):
        logit, value = self(x)
        log_probs = F.log_softmax(logit, dim=1)
        probs = F.softmax(logit, dim=1)
        entropy = -(probs * log_probs).sum(1).mean()
        return logit, log_probs.gather(1, action), value, entropy


class ImaginationCore(object):
    """Plain object (not a module): rolls the environment model forward with the distilled policy."""
    def __init__(self, env_model, distil_policy):
        self.env_model = env_model
        self.distil_policy = distil_policy

    def __call__(self, state):
        with torch.no_grad():
            action = self.distil_policy.act(state)
        onehot = F.one_hot(action.view(-1), num_actions).float()
        return self.env_model(torch.cat([state, onehot], 1))


class I2A(OnPolicy):
    def __init__(self, imagination, hidden=32):
        super().__init__(hidden)
        self.imagination = imagination
        self.encoder = nn.Linear(state_dim, state_dim)
        self.features = nn.Sequential(nn.Linear(2 * state_dim, hidden), nn.ReLU())

    def forward(self, x):
        imagined = self.encoder(self.imagination(x))
        return super().forward(torch.cat([x, imagined], 1))


env_model = nn.Linear(state_dim + num_actions, state_dim).requires_grad_(False)  # pretrained, frozen
distil_policy = OnPolicy(hidden=16)
distil_optimizer = optim.Adam(distil_policy.parameters())
imagination = ImaginationCore(env_model, distil_policy)
actor_critic = I2A(imagination)
optimizer = optim.RMSprop(actor_critic.parameters(), lr=7e-4, eps=1e-5, alpha=0.99)

before = distil_policy.actor.weight.detach().clone()
for i_update in range(20):
    states = torch.randn(num_steps * num_envs, state_dim)
    actions = torch.randint(0, num_actions, (num_steps * num_envs, 1))
    returns = torch.randn(num_steps * num_envs, 1)

    logit, action_log_probs, values, entropy = actor_critic.evaluate_actions(states, actions)
    distil_logit, _, _, _ = distil_policy.evaluate_actions(states, actions)
    distil_loss = 0.01 * (F.softmax(logit, dim=1).detach() * F.log_softmax(distil_logit, dim=1)).sum(1).mean()

    advantages = returns - values
    value_loss = advantages.pow(2).mean()
    action_loss = -(advantages.data * action_log_probs).mean()

    optimizer.zero_grad()
    loss = value_loss * 0.5 + action_loss - entropy * 0.01
    loss.backward()
    nn.utils.clip_grad_norm_(actor_critic.parameters(), 0.5)
    optimizer.step()

    distil_optimizer.zero_grad()
    distil_loss.backward()
    optimizer.step()  # <- optimizer

change = (distil_policy.actor.weight - before).abs().max().item()
print("distil_policy.actor.weight max change after 20 updates:", change)  # <- symptom
