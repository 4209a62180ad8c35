# neural_clbf (MIT-REALM/neural_clbf#11): training a neural control Lyapunov-barrier
# function for an inverted pendulum. The descent loss simulates one step of the
# closed-loop dynamics and penalises states where V does not decrease.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class InvertedPendulum:
    n_dims, n_controls = 2, 1
    dt = 0.01

    def __init__(self, m=1.0, L=1.0, b=0.01, g=9.81):
        self.m, self.L, self.b, self.g = m, L, b, g
        self.K = torch.tensor([[10.0, 3.0]])  # nominal LQR-like gain

    def closed_loop_dynamics(self, x, u):
        theta, theta_dot = x[:, 0], x[:, 1]
        theta_ddot = (self.g / self.L) * torch.sin(theta) - self.b * theta_dot / (self.m * self.L ** 2) \
            + u[:, 0] / (self.m * self.L ** 2)
        return torch.stack([theta_dot, theta_ddot], dim=1)

    def u_nominal(self, x):
        return -(x @ self.K.T)


class NeuralCLBF(nn.Module):
    def __init__(self, dynamics_model, hidden=48, clf_lambda=1.0, safe_level=1.0,
                 controller_period=0.01):
        super().__init__()
        self.dynamics_model = dynamics_model
        self.clf_lambda = clf_lambda
        self.safe_level = safe_level
        self.controller_period = controller_period
        self.V_nn = nn.Sequential(nn.Linear(2, hidden), nn.Tanh(),
                                  nn.Linear(hidden, hidden), nn.Tanh(),
                                  nn.Linear(hidden, hidden))
        self.u_nn = nn.Sequential(nn.Linear(2, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def V(self, x):
        h = self.V_nn(x)
        return 0.5 * (h * h).sum(dim=1)

    def u(self, x):
        return self.dynamics_model.u_nominal(x) + self.u_nn(x)

    def descent_loss(self, x):
        loss = []
        eps = 0.1
        V = self.V(x)
        condition_active = torch.sigmoid(10 * (self.safe_level + eps - V))
        u = self.u(x)

        eps = 1.0
        clbf_descent_term_sim = torch.tensor(0.0).type_as(x)
        xdot = self.dynamics_model.closed_loop_dynamics(x, u)
        x_next = x + self.dynamics_model.dt * xdot
        V_next = self.V(x_next)
        violation = F.relu(
            eps + (V_next - V) / self.controller_period + self.clf_lambda * V
        )
        violation = violation * condition_active
        clbf_descent_term_sim = clbf_descent_term_sim + violation.mean()
        loss.append(("CLBF descent term (simulated)", clbf_descent_term_sim))
        return loss


model = NeuralCLBF(InvertedPendulum())
opt = torch.optim.SGD(model.parameters(), lr=1e-3)

for step in range(3):
    x = (torch.rand(64, 2) - 0.5) * 2.0
    losses = model.descent_loss(x)
    total_loss = sum(v for _, v in losses)
    opt.zero_grad()
    total_loss.backward()
    opt.step()
    print(step, total_loss.item())
