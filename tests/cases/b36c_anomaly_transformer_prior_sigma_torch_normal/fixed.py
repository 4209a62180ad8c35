"""Anomaly Transformer for time-series anomaly detection (spencerbraun/anomaly_transformer_pytorch, issue #5):
the prior association is `torch.normal(p.float(), self.sigma[:, 0].abs())`, which *samples* around |i - j| instead
of evaluating the Gaussian kernel; sampling gives sigma a zero gradient, so the sigma projection `Ws` never moves
while Wq/Wk/Wv train (thread's fix: `1 / sqrt(2*pi) / sigma * exp(-0.5 * (p / sigma)**2)`). The row-wise KL of the
repo is replaced here by an L1 row discrepancy (the sampled prior can go negative, which makes the KL NaN)."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class AnomalyAttention(nn.Module):
    def __init__(self, N, d_model):
        super().__init__()
        self.d_model = d_model
        self.N = N
        self.Wq = nn.Linear(d_model, d_model, bias=False)
        self.Wk = nn.Linear(d_model, d_model, bias=False)
        self.Wv = nn.Linear(d_model, d_model, bias=False)
        self.Ws = nn.Linear(d_model, 1, bias=False)

    def forward(self, x):
        self.initialize(x)
        self.P = self.prior_association()
        self.S = self.series_association()
        return self.reconstruction()

    def initialize(self, x):
        self.Q = self.Wq(x)
        self.K = self.Wk(x)
        self.V = self.Wv(x)
        self.sigma = self.Ws(x)

    def prior_association(self):
        p = torch.from_numpy(np.abs(np.indices((self.N, self.N))[0] - np.indices((self.N, self.N))[1]))
        gaussian = 1 / math.sqrt(2 * math.pi) / self.sigma * torch.exp(-0.5 * (p / self.sigma).pow(2))
        gaussian /= gaussian.sum(dim=-1).view(-1, 1)
        return gaussian

    def series_association(self):
        return F.softmax((self.Q @ self.K.T) / math.sqrt(self.d_model), dim=0)

    def reconstruction(self):
        return self.S @ self.V


class AnomalyTransformerBlock(nn.Module):
    def __init__(self, N, d_model):
        super().__init__()
        self.attention = AnomalyAttention(N, d_model)
        self.ln1 = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, d_model), nn.ReLU())
        self.ln2 = nn.LayerNorm(d_model)

    def forward(self, x):
        z = self.ln1(self.attention(x) + x)
        return self.ln2(self.ff(z) + z)


class AnomalyTransformer(nn.Module):
    def __init__(self, N, d_model, layers, lambda_):
        super().__init__()
        self.blocks = nn.ModuleList([AnomalyTransformerBlock(N, d_model) for _ in range(layers)])
        self.lambda_ = lambda_

    def forward(self, x):
        self.P_layers, self.S_layers = [], []
        for block in self.blocks:
            x = block(x)
            self.P_layers.append(block.attention.P)
            self.S_layers.append(block.attention.S)
        self.output = x
        return x

    def association_discrepancy(self, P_list, S_list):
        return sum((P - S).abs().sum(dim=-1) for P, S in zip(P_list, S_list)) / len(P_list)

    def loss_function(self, x_hat, P_list, S_list, lambda_, x):
        frob_norm = torch.linalg.matrix_norm(x_hat - x, ord="fro")
        return frob_norm - lambda_ * torch.linalg.norm(self.association_discrepancy(P_list, S_list), ord=1)

    def min_loss(self, x):
        return self.loss_function(self.output, self.P_layers, [S.detach() for S in self.S_layers], -self.lambda_, x)

    def max_loss(self, x):
        return self.loss_function(self.output, [P.detach() for P in self.P_layers], self.S_layers, self.lambda_, x)


torch.manual_seed(0)
N, d_model = 8, 16
model = AnomalyTransformer(N, d_model, layers=2, lambda_=0.1)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
ws = model.blocks[0].attention.Ws.weight
ws_before = ws.detach().clone()
for step in range(5):
    batch = torch.randn(N, d_model)
    model(batch)
    min_loss = model.min_loss(batch)
    max_loss = model.max_loss(batch)
    min_loss.backward(retain_graph=True)
    max_loss.backward()
    print(f"step {step}: Ws grad norm {ws.grad.norm().item():.4f}, Wq grad norm "
          f"{model.blocks[0].attention.Wq.weight.grad.norm().item():.4f}")
    optimizer.step()
    model.zero_grad()
print("Ws changed:", not torch.equal(ws_before, ws.detach()))
