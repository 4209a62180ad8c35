# Continuous normalising flow trained by maximum likelihood through an
# ODESolver.compute_likelihood-style reverse Euler solve (Hutchinson divergence).
# Shape of facebookresearch/flow_matching issue #59: enable_grad=True, but the
# dynamics function returns detached velocity and divergence, so the velocity
# model's parameters never get a gradient from -log p(x).
import torch
from torch import nn

torch.manual_seed(0)


class Swish(nn.Module):
    def forward(self, x):
        return torch.sigmoid(x) * x


class MLP(nn.Module):
    def __init__(self, input_dim=2, time_dim=1, hidden_dim=16):
        super().__init__()
        self.input_dim = input_dim
        self.main = nn.Sequential(
            nn.Linear(input_dim + time_dim, hidden_dim), Swish(),
            nn.Linear(hidden_dim, hidden_dim), Swish(),
            nn.Linear(hidden_dim, input_dim),
        )

    def forward(self, x, t):
        t = t.reshape(-1, 1).expand(x.shape[0], 1)
        return self.main(torch.cat([x, t], dim=1))


def gradient(output, x, create_graph=False):
    grad_outputs = torch.ones_like(output).detach()
    return torch.autograd.grad(output, x, grad_outputs=grad_outputs, create_graph=create_graph)[0]


def odeint_euler(func, y0, time_grid, step_size):
    # fixed-step Euler on a tuple state, as torchdiffeq does for method="euler"
    t0, t1 = float(time_grid[0]), float(time_grid[-1])
    n = int(round(abs(t1 - t0) / step_size))
    dt = (t1 - t0) / n
    y, t = y0, t0
    for _ in range(n):
        dy = func(torch.tensor(t), y)
        y = tuple(yi + dt * dyi for yi, dyi in zip(y, dy))
        t = t + dt
    return y


def compute_likelihood(velocity_model, x_1, log_p0, step_size, enable_grad=False):
    time_grid = torch.tensor([1.0, 0.0])
    z = (torch.randn_like(x_1) < 0) * 2.0 - 1.0  # fixed Hutchinson projection

    def dynamics_func(t, states):
        xt = states[0]
        with torch.set_grad_enabled(True):
            xt.requires_grad_()
            ut = velocity_model(xt, t)
            ut_dot_z = torch.einsum("ij,ij->i", ut, z)
            grad_ut_dot_z = gradient(ut_dot_z, xt, create_graph=True)
            div = torch.einsum("ij,ij->i", grad_ut_dot_z, z)
        return ut.detach(), div.detach()  # <- detach

    y_init = (x_1, torch.zeros(x_1.shape[0]))
    with torch.set_grad_enabled(enable_grad):
        x_source, log_det = odeint_euler(dynamics_func, y_init, time_grid, step_size)
    return x_source, log_p0(x_source) + log_det


def log_p0(x):
    return -0.5 * (x ** 2).sum(dim=1) - x.shape[1] * 0.5 * torch.log(torch.tensor(2 * torch.pi))


model = MLP()
optim = torch.optim.Adam(model.parameters(), lr=1e-3)
before = model.main[0].weight.detach().clone()

for it in range(2):
    x_1 = torch.randn(32, 2) * 0.5 + 1.0  # "data" batch
    _, logp = compute_likelihood(model, x_1, log_p0, step_size=0.5, enable_grad=True)
    loss = -logp.mean()
    optim.zero_grad()
    loss.backward()
    optim.step()
    print(f"iter {it} nll {loss.item():.4f}")

print("first layer grad:", model.main[0].weight.grad)
print("weights changed:", not torch.equal(before, model.main[0].weight.detach()))
