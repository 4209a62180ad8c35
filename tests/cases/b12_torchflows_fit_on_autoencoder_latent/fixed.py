"""The fixed twin: the flow is fitted on detached latent codes (davidnabergoj/torchflows#8)."""
import math

import torch
import torch.nn.functional as F
from torch import nn


class AffineCoupling(nn.Module):
    def __init__(self, dim, flip):
        super().__init__()
        self.flip, self.half = flip, dim // 2
        self.net = nn.Sequential(nn.Linear(self.half, 16), nn.Tanh(), nn.Linear(16, 2 * (dim - self.half)))

    def forward(self, x):
        x = x.flip(-1) if self.flip else x
        x1, x2 = x[:, :self.half], x[:, self.half:]
        log_s, t = self.net(x1).chunk(2, -1)
        return torch.cat([x1, x2 * log_s.exp() + t], -1), log_s.sum(-1)


class Flow(nn.Module):
    def __init__(self, dim=4, n_layers=4):
        super().__init__()
        self.dim = dim
        self.layers = nn.ModuleList(AffineCoupling(dim, i % 2 == 1) for i in range(n_layers))

    def log_prob(self, x):
        log_det = 0.0
        for layer in self.layers:
            x, ld = layer(x)
            log_det = log_det + ld
        return -0.5 * (x ** 2).sum(-1) - 0.5 * self.dim * math.log(2 * math.pi) + log_det

    def fit(self, x_train, n_epochs=2, lr=0.05, batch_size=32):
        optimizer = torch.optim.AdamW(self.parameters(), lr=lr)
        for epoch in range(n_epochs):
            for i in range(0, len(x_train), batch_size):
                optimizer.zero_grad()
                train_loss = -self.log_prob(x_train[i:i + batch_size]).mean()
                train_loss.backward()
                optimizer.step()
        return train_loss


torch.manual_seed(0)
x = torch.randn(128, 8)
encoder, decoder = nn.Linear(8, 4), nn.Linear(4, 8)
ae_optimizer = torch.optim.Adam([*encoder.parameters(), *decoder.parameters()], lr=1e-2)
for step in range(5):
    ae_optimizer.zero_grad()
    F.mse_loss(decoder(encoder(x)), x).backward()
    ae_optimizer.step()
latent = encoder(x).detach()
flow = Flow()
first_before = flow.layers[0].net[0].weight.detach().clone()
final_loss = flow.fit(latent)
print(f"flow loss {final_loss.item():.3f}, learned: {not torch.equal(flow.layers[0].net[0].weight, first_before)}")
