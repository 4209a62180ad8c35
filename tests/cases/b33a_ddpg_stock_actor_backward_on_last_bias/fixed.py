"""JoshuaWu1997/PyTorch-DDPG-Stock-Trading#2, https://github.com/JoshuaWu1997/PyTorch-DDPG-Stock-Trading/issues/2:
DDPG for portfolio allocation. Critic.train returns a column mean of the critic's first weight gradient, and
Actor.train "trains" the actor with self.actor_weights[-1].backward(-loss_grad): backward called on the actor's last
bias, a leaf, so only that bias gets a .grad; the actor network is never run in the training step and every other
actor weight keeps .grad None and never moves. The reporter: the two gradients must come from separate losses;
train the actor with actor_loss = -critic(actor(state_batch), state_batch).mean(), backward, step.
The target values are detached here (the original left them attached to the target nets, which no optimizer holds).
The script prints the actor's first-layer .grad (None) and which actor weights changed."""
import torch

torch.manual_seed(0)
torch.set_num_threads(1)
GAMMA = 0.99


def hard_copy(target, source):
    for weight1, weight2 in zip(target, source):
        weight1.data = weight2.data.clone()


def soft_copy(target, source, w=0.01):
    for weight1, weight2 in zip(target, source):
        weight1.data = torch.add(weight1.data, torch.add(weight2.data, weight1.data, alpha=-1), alpha=w)


class ActorNet(torch.nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim):
        super().__init__()
        self.nn = torch.nn.Sequential(torch.nn.Linear(input_dim, hidden_dim), torch.nn.ReLU(),
                                      torch.nn.Linear(hidden_dim, output_dim), torch.nn.Softmax(dim=1))

    def forward(self, x):
        return self.nn(x)


class CriticNet(torch.nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim):
        super().__init__()
        self.nn2 = torch.nn.Sequential(torch.nn.Linear(hidden_dim + output_dim, hidden_dim), torch.nn.Tanh(),
                                       torch.nn.Linear(hidden_dim, 1))
        self.nn1 = torch.nn.Sequential(torch.nn.Linear(input_dim, hidden_dim), torch.nn.ReLU())

    def forward(self, a, x):
        return self.nn2(torch.cat((a, self.nn1(x)), 1))


class Actor:
    def __init__(self, state_dim, action_dim, hidden_dim):
        self.actor = ActorNet(state_dim, hidden_dim, action_dim)
        self.target = ActorNet(state_dim, hidden_dim, action_dim)
        self.actor_weights = [params for params in self.actor.parameters()]
        self.target_weights = [params for params in self.target.parameters()]
        self.optimizer = torch.optim.Adam(self.actor.parameters())
        hard_copy(self.target_weights, self.actor_weights)

    def train(self, critic, state_batch):
        self.optimizer.zero_grad()
        (-critic(self.actor_action(state_batch), state_batch).mean()).backward()
        self.optimizer.step()

    def actor_action(self, state):
        return self.actor(state)

    def target_action(self, state):
        return self.target(state)

    def update_target(self):
        soft_copy(self.target_weights, self.actor_weights)


class Critic:
    def __init__(self, state_dim, action_dim, hidden_dim):
        self.action_dim = action_dim
        self.critic = CriticNet(state_dim, hidden_dim, action_dim)
        self.target = CriticNet(state_dim, hidden_dim, action_dim)
        self.critic_weights = [params for params in self.critic.parameters()]
        self.target_weights = [params for params in self.target.parameters()]
        self.optimizer = torch.optim.Adam(self.critic.parameters())
        hard_copy(self.target_weights, self.critic_weights)

    def train(self, y_batch, action_batch, state_batch):
        y_pred = self.critic(action_batch, state_batch)
        self.loss = torch.nn.MSELoss()(y_pred, y_batch)
        self.optimizer.zero_grad()
        self.loss.backward()
        self.optimizer.step()
        return torch.mean(self.critic_weights[0].grad[:, :self.action_dim], dim=0)

    def target_q(self, next_action_batch, next_state_batch):
        return self.target(next_action_batch, next_state_batch).view(-1)

    def update_target(self):
        soft_copy(self.target_weights, self.critic_weights)


state_dim, action_dim, hidden_dim, batch_size = 12, 4, 16, 32
actor_network = Actor(state_dim, action_dim, hidden_dim)
critic_network = Critic(state_dim, action_dim, hidden_dim)
replay_state, replay_next_state = torch.randn(256, state_dim), torch.randn(256, state_dim)
replay_action = torch.softmax(torch.randn(256, action_dim), 1)
replay_reward = torch.randn(256)
w_before = actor_network.actor.nn[0].weight.detach().clone()
b_before = actor_network.actor.nn[2].bias.detach().clone()

for step in range(20):
    sample = torch.randint(0, 256, (batch_size,))
    state_batch, next_state_batch = replay_state[sample], replay_next_state[sample]
    action_batch, reward_batch = replay_action[sample], replay_reward[sample]
    next_action_batch = actor_network.target_action(next_state_batch)
    q_batch = critic_network.target_q(next_action_batch, next_state_batch)
    y_batch = torch.add(reward_batch, q_batch, alpha=GAMMA).view(-1, 1).detach()
    critic_network.train(y_batch, action_batch, state_batch)
    actor_network.train(critic_network.critic, state_batch)
    actor_network.update_target()
    critic_network.update_target()

g = actor_network.actor.nn[0].weight.grad
print("actor first layer grad:", None if g is None else f"norm {g.norm():.4g}")
print("actor first layer changed:", not torch.equal(w_before, actor_network.actor.nn[0].weight))
print("actor last bias changed:", not torch.equal(b_before, actor_network.actor.nn[2].bias))
