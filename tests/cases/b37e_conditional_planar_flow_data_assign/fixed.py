# Conditional normalising flow: an LSTM conditioner reads a context sequence
# and outputs the parameters (w, b, u) of a planar-flow transformer. The flow
# pushes base samples forward and is trained with a reverse-KL / ELBO loss.
import torch
import torch.nn as nn

torch.manual_seed(0)

ACTIVATION_DERIVATIVES = {torch.tanh: lambda x: 1 - torch.tanh(x) ** 2}


class PlanarFlow(nn.Module):
    def __init__(self, D, activation=torch.tanh):
        super().__init__()
        self.D = D
        # w, b, u come from the conditioner: plain tensors, not Parameters
        self.w = None
        self.b = None
        self.u = None
        self.activation = activation
        self.activation_derivative = ACTIVATION_DERIVATIVES[activation]

    def forward(self, z):
        lin = (z @ self.w + self.b).unsqueeze(1)
        f = z + self.u * self.activation(lin)
        phi = self.activation_derivative(lin) * self.w
        log_det = torch.log(torch.abs(1 + phi @ self.u) + 1e-4)
        return f, log_det

    def update_parameters(self, ws, bs, us):
        self.w = ws
        self.b = bs
        self.u = us


class Conditioner(nn.Module):
    def __init__(self, C, H, D):
        super().__init__()
        self.lstm = nn.LSTM(C, H, batch_first=True)
        self.to_w = nn.Linear(H, D)
        self.to_b = nn.Linear(H, 1)
        self.to_u = nn.Linear(H, D)

    def forward(self, context):
        _, (h, _) = self.lstm(context)
        h = h[-1, 0]
        return self.to_w(h), self.to_b(h), self.to_u(h)


D, C, H = 2, 3, 16
conditioner = Conditioner(C, H, D)
flow = PlanarFlow(D)
optimizer = torch.optim.Adam(list(conditioner.parameters()) + list(flow.parameters()), lr=1e-3)
base = torch.distributions.Normal(torch.zeros(D), torch.ones(D))
target = torch.distributions.Normal(torch.tensor([1.0, -1.0]), torch.tensor([0.5, 0.5]))

context = torch.randn(1, 10, C)
for step in range(3):
    optimizer.zero_grad()
    ws, bs, us = conditioner(context)
    flow.update_parameters(ws, bs, us)
    z0 = base.sample((64,))
    f, log_det = flow(z0)
    log_q = base.log_prob(z0).sum(-1) - log_det
    loss = (log_q - target.log_prob(f).sum(-1)).mean()
    loss.backward()
    optimizer.step()
    print(step, loss.item(), conditioner.lstm.weight_ih_l0.grad)
