# Probabilistic ensemble dynamics model (PETS, Hands-on-RL ch.16): 5 members in
# batched FC layers, each predicting a Gaussian (mean, log-variance) over
# (reward, next_state - state). The log-variance is soft-clamped between
# learnable bounds _max_logvar/_min_logvar, and the train step adds
# 0.01*sum(max_logvar) - 0.01*sum(min_logvar) to the loss to tighten them.
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)


class Swish(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x)


class FCLayer(nn.Module):
    def __init__(self, input_dim, output_dim, ensemble_size, activation):
        super().__init__()
        self._input_dim, self._output_dim = input_dim, output_dim
        self.weight = nn.Parameter(torch.empty(ensemble_size, input_dim, output_dim))
        self.bias = nn.Parameter(torch.zeros(ensemble_size, output_dim))
        nn.init.trunc_normal_(self.weight, std=1 / (2 * np.sqrt(input_dim)))
        self._activation = activation

    def forward(self, x):
        return self._activation(torch.add(torch.bmm(x, self.weight), self.bias[:, None, :]))


class EnsembleModel(nn.Module):
    def __init__(self, state_dim, action_dim, ensemble_size=5, learning_rate=1e-3):
        super().__init__()
        self._output_dim = (state_dim + 1) * 2
        self._max_logvar = nn.Parameter((torch.ones((1, self._output_dim // 2)).float() / 2), requires_grad=False)  # <- no_update
        self._min_logvar = nn.Parameter((-torch.ones((1, self._output_dim // 2)).float() * 10), requires_grad=False)  # <- no_update
        self.layer1 = FCLayer(state_dim + action_dim, 32, ensemble_size, Swish())
        self.layer2 = FCLayer(32, 32, ensemble_size, Swish())
        self.layer3 = FCLayer(32, self._output_dim, ensemble_size, nn.Identity())
        self.optimizer = torch.optim.Adam(self.parameters(), lr=learning_rate)

    def forward(self, x, return_log_var=False):
        ret = self.layer3(self.layer2(self.layer1(x)))
        mean = ret[:, :, :self._output_dim // 2]
        logvar = self._max_logvar - F.softplus(self._max_logvar - ret[:, :, self._output_dim // 2:])
        logvar = self._min_logvar + F.softplus(logvar - self._min_logvar)
        return mean, logvar if return_log_var else torch.exp(logvar)

    def loss(self, mean, logvar, labels):
        inverse_var = torch.exp(-logvar)
        mse_loss = torch.mean(torch.mean(torch.pow(mean - labels, 2) * inverse_var, dim=-1), dim=-1)
        var_loss = torch.mean(torch.mean(logvar, dim=-1), dim=-1)
        total_loss = torch.sum(mse_loss) + torch.sum(var_loss)
        return total_loss, mse_loss

    def train_step(self, loss):
        self.optimizer.zero_grad()
        loss += 0.01 * torch.sum(self._max_logvar) - 0.01 * torch.sum(self._min_logvar)
        loss.backward()
        self.optimizer.step()


state_dim, action_dim, n_net = 3, 1, 5
model = EnsembleModel(state_dim, action_dim, ensemble_size=n_net)
max_before = model._max_logvar.detach().clone()

inputs = np.random.randn(256, state_dim + action_dim).astype(np.float32)
labels = np.random.randn(256, state_dim + 1).astype(np.float32)
for it in range(20):
    idx = np.vstack([np.random.permutation(256)[:64] for _ in range(n_net)])
    train_input = torch.from_numpy(inputs[idx]).float()
    train_label = torch.from_numpy(labels[idx]).float()
    mean, logvar = model(train_input, return_log_var=True)
    loss, _ = model.loss(mean, logvar, train_label)
    model.train_step(loss)

print("loss", loss.item())
print("_max_logvar.grad:", model._max_logvar.grad)
print("_max_logvar changed:", not torch.equal(max_before, model._max_logvar.detach()))
