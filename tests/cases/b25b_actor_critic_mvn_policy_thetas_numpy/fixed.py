"""discuss.pytorch.org "Actor Critic with Multivariate Normal - network weights fail to update",
https://discuss.pytorch.org/t/actor-critic-with-multivariate-normal-network-weights-fail-to-update/74548: the user
adapted the one-step Actor-Critic agent of "Machine Learning with Phil" (GenericNetwork with its own Adam optimizer,
choose_action / learn) from CartPole's Categorical policy to a continuous 2-D Gaussian policy whose means are the
sigmoid outputs scaled to (0, 2 pi) and (0, pi/2). To build the distribution they passed
`policy_thetas.detach().numpy()` to a NumPy helper and wrapped its results back with torch.FloatTensor, so
self.log_probs is a constant: actor_loss = -self.log_probs * delta only reaches the critic through delta, every actor
weight keeps grad None and the actor never changes ("the network weights never seem to be updated").
Fix: compute the Gaussian's parameters from policy_thetas with torch ops (no .detach()/.numpy()) and build the
MultivariateNormal from those tensors, so log_prob carries the actor's graph. The environment is a small seeded
stand-in with a 2-D continuous action."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
import torch.distributions.multivariate_normal as mn

torch.manual_seed(0)
np.random.seed(0)
torch.set_num_threads(1)


class GenericNetwork(nn.Module):
    def __init__(self, lr, input_dims, fc1_dims, fc2_dims, n_actions):
        super(GenericNetwork, self).__init__()
        self.fc1 = nn.Linear(input_dims, fc1_dims)
        self.fc2 = nn.Linear(fc1_dims, fc2_dims)
        self.fc3 = nn.Linear(fc2_dims, n_actions)
        self.optimizer = optim.Adam(self.parameters(), lr=lr)

    def forward(self, observation):
        state = torch.Tensor(observation)
        x = F.relu(self.fc1(state))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


def get_params_from_policy_thetas(policy_thetas):
    mu = policy_thetas * torch.tensor([2 * np.pi, np.pi / 2])
    S = torch.diag(torch.tensor([0.1, 0.1]))
    return mu, S


class Agent(object):
    def __init__(self, alpha, beta, input_dims, gamma=0.99, layer1_size=32, layer2_size=32, n_outputs=2):
        self.gamma = gamma
        self.log_probs = None
        self.actor = GenericNetwork(alpha, input_dims, layer1_size, layer2_size, n_actions=n_outputs)
        self.critic = GenericNetwork(beta, input_dims, layer1_size, layer2_size, n_actions=1)

    def choose_action(self, observation):
        # probabilities = F.softmax(self.actor.forward(observation))
        # action_probs = T.distributions.Categorical(probabilities)
        policy_thetas = torch.sigmoid(self.actor.forward(observation))
        mu, S = get_params_from_policy_thetas(policy_thetas)
        action_probs = mn.MultivariateNormal(mu,
                                             S)
        action = action_probs.sample()
        self.log_probs = action_probs.log_prob(action)
        return action.numpy()

    def learn(self, state, reward, new_state, done):
        self.actor.optimizer.zero_grad()
        self.critic.optimizer.zero_grad()

        critic_value = self.critic.forward(state)
        critic_value_ = self.critic.forward(new_state)

        delta = ((reward + self.gamma * critic_value_ * (1 - int(done))) - critic_value)

        actor_loss = -self.log_probs * delta
        critic_loss = delta ** 2

        (actor_loss + critic_loss).backward()

        self.actor.optimizer.step()
        self.critic.optimizer.step()


# --- the user's environment, in short: 4-D observation, 2 angles as the action ---------------
class AngleEnv:
    target = np.array([np.pi, np.pi / 4])

    def reset(self):
        self.t = 0
        self.state = np.random.randn(4).astype(np.float32)
        return self.state

    def step(self, action):
        self.t += 1
        reward = -float(np.sum((action - self.target) ** 2))
        self.state = np.random.randn(4).astype(np.float32)
        return self.state, reward, self.t >= 5, {}


agent = Agent(alpha=1e-4, beta=5e-4, input_dims=4)
env = AngleEnv()
actor_before = agent.actor.fc1.weight.detach().clone()
for i in range(4):
    done = False
    observation = env.reset()
    score = 0
    while not done:
        action = agent.choose_action(observation)
        observation_, reward, done, info = env.step(action)
        agent.learn(observation, reward, observation_, done)
        observation = observation_
        score += reward
    print('episode', i, 'score %.2f' % score)

print("actor fc1.weight.grad is None:", agent.actor.fc1.weight.grad is None)
print("actor weights changed:", not torch.equal(actor_before, agent.actor.fc1.weight))
