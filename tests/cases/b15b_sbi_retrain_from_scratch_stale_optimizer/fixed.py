"""sbi, sequential neural posterior estimation (sbi-dev/sbi#200, fixed by PR #211,
https://github.com/sbi-dev/sbi/issues/200): with `retrain_from_scratch_each_round=True`, `_train` builds the
Adam optimizer on `self._neural_posterior.neural_net.parameters()` and only then resets
`self._neural_posterior = deepcopy(self._untrained_neural_posterior)`. From round 1 on the optimizer still
points to the old network, so the fresh copy that computes the loss gets gradients every batch but is never
stepped ("it points to the wrong nn and won't train anything"). The fix builds the optimizer after the reset."""
from copy import deepcopy

import torch
from torch import nn, optim
from torch.nn.utils import clip_grad_norm_
from torch.utils import data


class NeuralPosterior(nn.Module):
    def __init__(self, theta_dim=2, x_dim=3):
        super().__init__()
        self.neural_net = nn.Sequential(nn.Linear(x_dim, 16), nn.Tanh(), nn.Linear(16, 2 * theta_dim))

    def log_prob(self, inputs, context):
        mean, log_std = self.neural_net(context).chunk(2, dim=-1)
        return torch.distributions.Normal(mean, log_std.exp()).log_prob(inputs).sum(-1)


class SNPE:
    def __init__(self, retrain_from_scratch_each_round=True):
        self._neural_posterior = NeuralPosterior()
        self._untrained_neural_posterior = deepcopy(self._neural_posterior)
        self._retrain_from_scratch_each_round = retrain_from_scratch_each_round
        self._parameter_bank, self._observation_bank = [], []

    def _run_sims(self, num_simulations):
        theta = torch.randn(num_simulations, 2)
        x = torch.cat([theta, theta.sum(-1, keepdim=True)], -1) + 0.1 * torch.randn(num_simulations, 3)
        self._parameter_bank.append(theta)
        self._observation_bank.append(x)

    def _train(self, round_, batch_size=50, learning_rate=5e-3, epochs=3):
        dataset = data.TensorDataset(torch.cat(self._parameter_bank), torch.cat(self._observation_bank))
        train_loader = data.DataLoader(dataset, batch_size=batch_size, shuffle=True, drop_last=True)

        # If we're retraining from scratch each round, reset the neural posterior
        # to the untrained copy we made at the start.
        if self._retrain_from_scratch_each_round and round_ > 0:
            self._neural_posterior = deepcopy(self._untrained_neural_posterior)

        optimizer = optim.Adam(list(self._neural_posterior.neural_net.parameters()), lr=learning_rate)

        for epoch in range(epochs):
            self._neural_posterior.neural_net.train()
            for inputs, context in train_loader:
                optimizer.zero_grad()
                log_prob = self._neural_posterior.log_prob(inputs, context)
                loss = -torch.mean(log_prob)
                loss.backward()
                clip_grad_norm_(self._neural_posterior.neural_net.parameters(), max_norm=5.0)
                optimizer.step()
        return loss.item()

    def __call__(self, num_rounds=2, num_simulations_per_round=200):
        for round_ in range(num_rounds):
            self._run_sims(num_simulations_per_round)
            before = [p.detach().clone() for p in self._untrained_neural_posterior.neural_net.parameters()]
            loss = self._train(round_)
            changed = any(not torch.equal(b, p) for b, p in
                          zip(before, self._neural_posterior.neural_net.parameters()))
            print(f"round {round_}: final loss {loss:.3f}; posterior net moved from its init: {changed}")
        return self._neural_posterior


torch.manual_seed(0)
posterior = SNPE(retrain_from_scratch_each_round=True)()
