"""The fixed twin: the forces are taken with create_graph=True (aiqm/torchani#238), so the force loss trains the
atomic networks."""
import torch
from torch import nn


class AtomicEnergyModel(nn.Module):
    """A stand-in for ANI: pairwise radial features of each atom, an atomic network, a sum over atoms."""

    def __init__(self, n_radial=8):
        super().__init__()
        self.centers = torch.linspace(0.8, 4.0, n_radial)
        self.atomic_network = nn.Sequential(nn.Linear(n_radial, 32), nn.CELU(0.1), nn.Linear(32, 16), nn.CELU(0.1),
                                            nn.Linear(16, 1))

    def forward(self, coordinates):
        distances = (coordinates.unsqueeze(2) - coordinates.unsqueeze(1)).pow(2).sum(-1).add(1e-6).sqrt()
        aev = torch.exp(-4.0 * (distances.unsqueeze(-1) - self.centers) ** 2).sum(2)
        return self.atomic_network(aev).squeeze(-1).sum(1)


torch.manual_seed(0)
model = AtomicEnergyModel()
net = model.atomic_network
AdamW = torch.optim.AdamW([{'params': [net[0].weight]}, {'params': [net[2].weight], 'weight_decay': 1e-5},
                           {'params': [net[4].weight]}], lr=1e-3)
SGD = torch.optim.SGD([{'params': [net[0].bias]}, {'params': [net[2].bias]}, {'params': [net[4].bias]}], lr=1e-3)
mse = nn.MSELoss(reduction='none')
force_coefficient = 0.1
for i in range(3):
    coordinates = (torch.randn(4, 5, 3) * 1.5).requires_grad_(True)
    true_energies, true_forces = torch.randn(4), torch.randn(4, 5, 3)
    num_atoms = torch.full((4,), 5.0)
    predicted_energies = model(coordinates)
    forces = -torch.autograd.grad(predicted_energies.sum(), coordinates, create_graph=True, retain_graph=True)[0]
    energy_loss = (mse(predicted_energies, true_energies) / num_atoms.sqrt()).mean()
    force_loss = (mse(true_forces, forces).sum(dim=(1, 2)) / num_atoms).mean()
    loss = energy_loss + force_coefficient * force_loss
    AdamW.zero_grad()
    SGD.zero_grad()
    loss.backward()
    AdamW.step()
    SGD.step()
    print(f"batch {i}: energy loss {energy_loss.item():.4f} force loss {force_loss.item():.4f} "
          f"(force loss requires grad: {force_loss.requires_grad})")
assert force_loss.requires_grad
e = model(coordinates)
f = -torch.autograd.grad(e.sum(), coordinates, create_graph=True)[0]
force_grads = torch.autograd.grad(mse(true_forces, f).mean(), [net[0].weight, net[2].weight, net[4].weight])
assert all(g.abs().sum() > 0 for g in force_grads)
print("force loss reaches the atomic network: True")
