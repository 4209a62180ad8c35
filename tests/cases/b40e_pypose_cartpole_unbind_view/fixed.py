# pypose MPC cartpole example (pypose/pypose#344): learning the pole length and mass
# of a cart-pole model by backpropagating through an MPC-style rollout of the
# system. The rollout below mirrors the library's forward recursion over a
# preallocated trajectory tensor; CartPole is the user's system definition.
# Symptom: traj_loss.backward() raises a RuntimeError.
import torch
import torch.nn as nn
import torch.optim as optim

torch.manual_seed(0)


class CartPole(nn.Module):
    def __init__(self, dt, length, cartmass, polemass, gravity):
        super().__init__()
        self.tau = dt
        self.length = length
        self.cartmass = cartmass
        self.polemass = polemass
        self.gravity = gravity
        self.poleml = self.polemass * self.length
        self.totalMass = self.cartmass + self.polemass

    def state_transition(self, state, input, t=None):
        x, xDot, theta, thetaDot = state.clone().squeeze()
        force = input.squeeze()
        costheta = torch.cos(theta)
        sintheta = torch.sin(theta)
        temp = (force + self.poleml * thetaDot**2 * sintheta) / self.totalMass
        thetaAcc = (self.gravity * sintheta - costheta * temp) / \
            (self.length * (4.0 / 3.0 - self.polemass * costheta**2 / self.totalMass))
        xAcc = temp - self.poleml * thetaAcc * costheta / self.totalMass
        _dstate = torch.stack((xDot, xAcc, thetaDot, thetaAcc))
        return (state.squeeze() + torch.mul(_dstate, self.tau)).unsqueeze(0)

    def forward(self, state, input):
        return self.state_transition(state, input)


def rollout(system, x_init, u_traj, T):
    # mirrors the library's forward recursion
    x_traj = torch.zeros(1, T, x_init.size(-1))
    x_traj[..., 0, :] = x_init
    for i in range(T - 1):
        x_traj[..., i + 1, :] = system(x_traj[..., i, :], u_traj[..., i, :])
    return x_traj


n_state, n_ctrl, T = 4, 1, 5
dt, g = 0.01, 9.81
time = torch.arange(0, T) * dt
current_u = torch.sin(time).unsqueeze(1).unsqueeze(0)

exp = dict(len=torch.tensor(1.5), m_cart=torch.tensor(20.0), m_pole=torch.tensor(10.0))

len_ = torch.tensor(2.0).requires_grad_()
m_pole = torch.tensor(11.1).requires_grad_()


def get_loss(x_init, _len, _m_pole):
    solver_exp = CartPole(dt, exp['len'], exp['m_cart'], exp['m_pole'], g)
    x_true = rollout(solver_exp, x_init, current_u, T)
    solver_agt = CartPole(dt, _len, exp['m_cart'], _m_pole, g)
    x_pred = rollout(solver_agt, x_init, current_u, T)
    return ((x_true - x_pred) ** 2).mean()


opt = optim.RMSprop([len_, m_pole], lr=1e-2)

for i in range(3):
    x_init = torch.tensor([[0, 0, torch.pi + torch.deg2rad(5.0 * torch.randn(1)), 0]])
    traj_loss = get_loss(x_init, len_, m_pole)
    opt.zero_grad()
    traj_loss.backward()
    opt.step()
    print(f"{i:04d}: traj_loss {traj_loss.item():.8f} len {len_.item():.4f} m_pole {m_pole.item():.4f}")
