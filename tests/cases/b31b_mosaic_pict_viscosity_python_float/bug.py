"""pasteurlabs/mosaic PR #21 "pict: expose viscosity as a differentiable input"
(https://github.com/pasteurlabs/mosaic/pull/21): the PICT wrapper around the differentiable PISO solver already
tracked v0 / inflow_profile as tensors, but `viscosity_val` was unpacked to a Python float at domain construction
(_make_domain), so the time loop used a constant and the gradient for the viscosity came back as nothing (the VJP
returned a hard zero). The PR converts viscosity_val to a torch.Tensor through _make_domain / _run_pict and makes
it a live autograd leaf. Here: an inverse problem fitting the viscosity (and the initial velocity) of a 1D
viscous Burgers solver to an observed final field; viscosity.grad stays None and the viscosity never moves.
Fix: keep the tensor in the domain instead of float(...)."""
import math

import torch

torch.manual_seed(0)
N, DT, STEPS = 64, 2e-3, 40
DX = 2 * math.pi / N


class Domain:
    def __init__(self, viscosity, v0):
        self.viscosity = viscosity
        self.v0 = v0


def _make_domain(viscosity_val, v0):
    return Domain(viscosity=float(viscosity_val), v0=v0)  # <- item


def _run_pict(domain, steps=STEPS, dt=DT):
    # explicit viscous Burgers step on a periodic grid (stand-in for the PISO time loop)
    u = domain.v0
    for _ in range(steps):
        lap = (torch.roll(u, 1) - 2 * u + torch.roll(u, -1)) / DX**2
        adv = u * (torch.roll(u, -1) - torch.roll(u, 1)) / (2 * DX)
        u = u + dt * (domain.viscosity * lap - adv)
    return u


x = torch.arange(N) * DX
with torch.no_grad():  # synthetic observation from the true viscosity
    u_obs = _run_pict(Domain(viscosity=torch.tensor(0.5), v0=torch.sin(x)))

viscosity = torch.tensor(0.1, requires_grad=True)
v0 = (torch.sin(x) + 0.05 * torch.randn(N)).requires_grad_(True)
optimizer = torch.optim.Adam([viscosity, v0], lr=0.05)
viscosity_before = viscosity.detach().clone()

for it in range(30):
    optimizer.zero_grad()
    domain = _make_domain(viscosity, v0)
    u_final = _run_pict(domain)
    loss = ((u_final - u_obs) ** 2).mean()
    loss.backward()
    if it == 0:
        print("viscosity.grad:", viscosity.grad)
        print("v0.grad is None:", v0.grad is None)
    optimizer.step()

print("loss: %.3e" % loss.item())
print("viscosity before %.4f after %.4f, changed: %s"
      % (viscosity_before.item(), viscosity.item(), not torch.equal(viscosity_before, viscosity.detach())))
