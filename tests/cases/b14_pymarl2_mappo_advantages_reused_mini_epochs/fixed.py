"""The fixed twin: the advantages are detached before the mini-epochs (hijkzzz/pymarl2#46), so each mini-epoch's
backward has its own graph; the critic learns from its value loss."""
import torch
from torch import nn

n_agents, n_actions, obs_dim, T, mini_epochs, gamma, gae_lambda, eps_clip = 3, 5, 8, 6, 2, 0.99, 0.95, 0.2


def build_gae_targets(rewards, values, gamma, lam):
    advantages, gae = torch.zeros_like(rewards), torch.zeros_like(rewards[:, 0])
    for t in reversed(range(rewards.shape[1])):
        delta = rewards[:, t] + gamma * values[:, t + 1] - values[:, t]
        gae = delta + gamma * lam * gae
        advantages[:, t] = gae
    return advantages, advantages + values[:, :-1]


class PPOLearner:
    def __init__(self):
        self.mac = nn.Sequential(nn.Linear(obs_dim, 32), nn.ReLU(), nn.Linear(32, n_actions), nn.Softmax(-1))
        self.critic = nn.Sequential(nn.Linear(obs_dim, 32), nn.ReLU(), nn.Linear(32, 1))
        self.params = list(self.mac.parameters()) + list(self.critic.parameters())
        self.optimiser = torch.optim.Adam(params=self.params, lr=5e-4)

    def train(self, obs, actions, rewards, old_probs):
        old_logprob = torch.log(torch.gather(old_probs, dim=3, index=actions)).detach()
        values = self.critic(obs)
        advantages, targets = build_gae_targets(rewards, values, gamma, gae_lambda)
        advantages = ((advantages - advantages.mean()) / (advantages.std() + 1e-6)).detach()
        for _ in range(mini_epochs):
            values = self.critic(obs[:, :-1])
            critic_loss = 0.5 * ((values - targets.detach()) ** 2).mean()
            pi = self.mac(obs[:, :-1])
            ratios = torch.exp(torch.log(torch.gather(pi, dim=3, index=actions)) - old_logprob)
            surr1 = ratios * advantages
            surr2 = torch.clamp(ratios, 1 - eps_clip, 1 + eps_clip) * advantages
            actor_loss = -torch.min(surr1, surr2).mean()
            loss = actor_loss + 0.5 * critic_loss
            self.optimiser.zero_grad()
            loss.backward()
            self.optimiser.step()
        return loss


torch.manual_seed(0)
learner = PPOLearner()
for episode in range(2):
    obs = torch.randn(4, T + 1, n_agents, obs_dim)
    actions = torch.randint(0, n_actions, (4, T, n_agents, 1))
    rewards = torch.randn(4, T, n_agents, 1)
    old_probs = torch.softmax(torch.randn(4, T, n_agents, n_actions), -1)
    loss = learner.train(obs, actions, rewards, old_probs)
    print(f"episode {episode}: loss {loss.item():.4f}")
before = [p.detach().clone() for p in learner.params]
learner.train(obs, actions, rewards, old_probs)
for p, b in zip(learner.params, before):
    assert p.grad is not None and not torch.equal(p, b)
print("every parameter of the actor and the critic got a gradient and changed")
