"""DLR-RM/stable-baselines3 issue #1271, "[Feature Request] Make optimizer only when needed",
https://github.com/DLR-RM/stable-baselines3/issues/1271: the reporter's features extractor builds its network during
the first forward pass (`if self.net is None: self.net = ...`) because the input shape is not known in advance. This
"fails silently": SB3's policy constructs its optimizer in __init__ from self.parameters(), before any forward, so the
network created later is not among the optimizer's parameters; it gets gradients at every update but never changes.
The maintainer's answer: compute the shape at initialization, as NatureCNN does (a dummy forward on a sample
observation in __init__), so the network exists before the optimizer is built. The SB3 policy/extractor classes are
reduced to a few lines; the PPO update to a behaviour-cloning loss on random observations."""
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)


class BaseFeaturesExtractor(nn.Module):
    def __init__(self, observation_shape, features_dim):
        super().__init__()
        self.observation_shape = observation_shape
        self.features_dim = features_dim


class LazyExtractor(BaseFeaturesExtractor):
    def __init__(self, observation_shape, features_dim=16):
        super().__init__(observation_shape, features_dim)
        sample = torch.zeros(1, *observation_shape)  # compute the shape at initialization, as NatureCNN does
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(sample[0].numel(), self.features_dim), nn.ReLU())

    def forward(self, observations):
        return self.net(observations)


class ActorCriticPolicy(nn.Module):
    def __init__(self, observation_shape, n_actions, lr_schedule, features_extractor_class=LazyExtractor,
                 optimizer_class=torch.optim.Adam):
        super().__init__()
        self.features_extractor = features_extractor_class(observation_shape)
        self.action_net = nn.Linear(self.features_extractor.features_dim, n_actions)
        self.value_net = nn.Linear(self.features_extractor.features_dim, 1)
        self.optimizer = optimizer_class(self.parameters(), lr=lr_schedule(1))

    def forward(self, obs):
        features = self.features_extractor(obs)
        return self.action_net(features), self.value_net(features)


policy = ActorCriticPolicy((4, 3), n_actions=2, lr_schedule=lambda _: 3e-3)
rollout = [(torch.randn(8, 4, 3), torch.randn(8, 2), torch.randn(8, 1)) for _ in range(5)]

w_before = None
for obs, target_actions, returns in rollout:
    actions, values = policy(obs)
    if w_before is None:
        w_before = policy.features_extractor.net[1].weight.detach().clone()
    loss = nn.functional.mse_loss(actions, target_actions) + 0.5 * nn.functional.mse_loss(values, returns)
    policy.optimizer.zero_grad()
    loss.backward()
    policy.optimizer.step()

w = policy.features_extractor.net[1].weight
print("extractor grad is None:", w.grad is None)
print("extractor weight changed:", not torch.equal(w_before, w))
