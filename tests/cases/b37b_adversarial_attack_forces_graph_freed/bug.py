# Adversarial attack on an ensemble of neural force fields (Atomistic-Adversarial-Attacks style):
# a displacement `delta` on the atoms is optimised to maximise the ensemble's force variance,
# weighted by the Boltzmann probability of the predicted energy.
# The user's own model computes its forces inside forward with torch.autograd.grad.
import torch
import torch.nn as nn

torch.manual_seed(0)


class PairEnergyModel(nn.Module):
    def __init__(self, n_rbf=16, cutoff=5.0):
        super().__init__()
        self.register_buffer("centers", torch.linspace(0.0, cutoff, n_rbf))
        self.net = nn.Sequential(nn.Linear(n_rbf, 32), nn.Tanh(), nn.Linear(32, 1))

    def forward(self, batch):
        xyz = batch["nxyz"][:, 1:]
        nbr = batch["nbr_list"]
        r = (xyz[nbr[:, 1]] - xyz[nbr[:, 0]]).norm(dim=-1, keepdim=True)
        rbf = torch.exp(-((r - self.centers) ** 2))
        energy = self.net(rbf).sum()
        energy_grad, = torch.autograd.grad(energy, xyz)  # <- autograd_error
        return {"energy": energy, "energy_grad": energy_grad}


class AdvLoss:
    def __init__(self, train_e, temperature=1.0):
        self.e = train_e
        self.temperature = temperature

    def boltzmann_probability(self, e):
        return torch.exp(-e / self.temperature)

    def probability_fn(self, yp):
        return self.boltzmann_probability(yp) / self.boltzmann_probability(self.e).mean()

    def loss_fn(self, x, e, f):
        return -f.var(-1).mean(-1, keepdim=True) * self.probability_fn(e.mean(-1).reshape(-1, 1))


num_atoms = 6
ensemble = [PairEnergyModel() for _ in range(3)]
loss_fn = AdvLoss(train_e=torch.randn(20))

initial_nxyz = torch.cat([torch.ones(num_atoms, 1), 2.0 * torch.randn(num_atoms, 3)], dim=1)
ii, jj = torch.meshgrid(torch.arange(num_atoms), torch.arange(num_atoms), indexing="ij")
keep = ii != jj
nbr_list = torch.stack([ii[keep], jj[keep]], dim=1)

delta = 0.01 * torch.randn(num_atoms, 3)
delta.requires_grad = True
opt = torch.optim.Adam([delta], lr=1e-2)

for epoch in range(5):
    opt.zero_grad()
    batch = {"nxyz": initial_nxyz.clone(), "nbr_list": nbr_list}
    translation = torch.cat([torch.zeros(num_atoms, 1), delta], dim=1)
    batch["nxyz"].requires_grad = True
    batch["nxyz"] = batch["nxyz"] + translation

    results = [m(batch) for m in ensemble]
    forces = torch.stack([r["energy_grad"] for r in results], dim=-1)
    energy = torch.stack([r["energy"] for r in results], dim=-1)
    energy_per_atom = energy / num_atoms
    loss = loss_fn.loss_fn(x=None, e=energy_per_atom, f=forces).sum()

    opt.zero_grad()
    loss.backward()
    opt.step()
    delta.data.clamp_(-3, 3)
    print(epoch, loss.item(), delta.abs().sum().item())
