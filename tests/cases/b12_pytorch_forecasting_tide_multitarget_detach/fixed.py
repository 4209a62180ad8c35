"""pytorch-forecasting's TiDE model, multivariate-target path (sktime/pytorch-forecasting#2208): forward turns the
per-target predictions into `[i.clone().detach().requires_grad_(True) for i in prediction]`, which makes each one a
new leaf; the loss backpropagates into those leaves only, the encoder/decoder weights get no gradient and "the model
effectively cannot learn for multivariate targets". The PR drops the `.detach()`."""
import torch
import torch.nn.functional as F
from torch import nn


class ResidualBlock(nn.Module):
    def __init__(self, d_in, d_hidden, d_out):
        super().__init__()
        self.dense = nn.Sequential(nn.Linear(d_in, d_hidden), nn.ReLU(), nn.Linear(d_hidden, d_out))
        self.skip = nn.Linear(d_in, d_out)
        self.norm = nn.LayerNorm(d_out)

    def forward(self, x):
        return self.norm(self.dense(x) + self.skip(x))


class TiDEModel(nn.Module):
    def __init__(self, lookback=24, horizon=6, n_targets=2, hidden=32, d_dec=4):
        super().__init__()
        self.horizon, self.n_targets, self.d_dec = horizon, n_targets, d_dec
        self.encoder = ResidualBlock(lookback * n_targets, hidden, hidden)
        self.decoder = ResidualBlock(hidden, hidden, horizon * d_dec * n_targets)
        self.temporal_decoder = ResidualBlock(d_dec, 8, 1)
        self.lookback_skip = nn.Linear(lookback, horizon)

    def forward(self, x):  # x: (batch, lookback, n_targets)
        b = x.shape[0]
        dec = self.decoder(self.encoder(x.flatten(1))).view(b, self.n_targets, self.horizon, self.d_dec)
        out = self.temporal_decoder(dec).squeeze(-1) + self.lookback_skip(x.transpose(1, 2))
        prediction = list(out.unbind(1))  # one (batch, horizon) tensor per target
        if self.n_targets > 1:
            prediction = [i.clone().requires_grad_(True) for i in prediction]
        return prediction


torch.manual_seed(0)
model = TiDEModel()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
series = torch.sin(torch.linspace(0, 12, 60))[None, :, None] * torch.tensor([1.0, 0.5]) + 0.1 * torch.randn(8, 60, 2)
x, y = series[:, :24], series[:, 24:30]
before = {n: p.detach().clone() for n, p in model.named_parameters()}
for step in range(3):
    prediction = model(x)
    loss = sum(F.mse_loss(p, y[:, :, k]) for k, p in enumerate(prediction))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
for n, p in model.named_parameters():
    print(n, "grad", p.grad is not None, "changed", not torch.equal(before[n], p))
