# Force training through a neighbour-list data helper (e3nn DataNeighbors style).
# The neighbour list is built in numpy (like ase.neighborlist.primitive_neighbor_list)
# and the relative vectors it returns are wrapped back into torch as edge_attr.
import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)
np.random.seed(0)
torch.set_default_dtype(torch.float64)


def primitive_neighbor_list(quantities, pos, cutoff, self_interaction=False):
    # numpy stand-in for ase.neighborlist.primitive_neighbor_list('ijSD', ...)
    d = pos[None, :, :] - pos[:, None, :]
    dist = np.linalg.norm(d, axis=-1)
    mask = dist < cutoff
    if not self_interaction:
        np.fill_diagonal(mask, False)
    i, j = np.nonzero(mask)
    S = np.zeros((len(i), 3), dtype=np.int64)
    D = d[i, j]
    out = {"i": i, "j": j, "S": S, "D": D}
    return tuple(out[q] for q in quantities)


def neighbor_list_and_relative_vec(pos, r_max, self_interaction=False):
    # When predicting forces, positions may have requires_grad = True.
    temp_pos = pos.detach().numpy()
    first_idex, second_idex, shifts, displacements = primitive_neighbor_list(
        "ijSD", temp_pos, cutoff=r_max, self_interaction=self_interaction)
    edge_index = torch.vstack((torch.LongTensor(first_idex), torch.LongTensor(second_idex)))
    edge_attr = torch.as_tensor(displacements)  # <- tensor_rewrap
    return edge_index, edge_attr


class PairConv(nn.Module):
    def __init__(self, n_in, n_out, n_basis=8, r_max=2.0):
        super().__init__()
        self.centers = torch.linspace(0.0, r_max, n_basis)
        self.radial = nn.Sequential(nn.Linear(n_basis, 32), nn.SiLU(), nn.Linear(32, n_in * n_out))
        self.n_in, self.n_out = n_in, n_out

    def forward(self, x, edge_index, edge_attr):
        r = edge_attr.norm(dim=-1, keepdim=True)
        basis = torch.exp(-((r - self.centers) ** 2) / 0.1)
        w = self.radial(basis).view(-1, self.n_in, self.n_out)
        msg = torch.einsum("ei,eio->eo", x[edge_index[1]], w)
        return torch.zeros(x.shape[0], self.n_out).index_add(0, edge_index[0], msg)


class EnergyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = PairConv(2, 16)
        self.conv2 = PairConv(16, 1)

    def forward(self, x, edge_index, edge_attr):
        h = torch.tanh(self.conv1(x, edge_index, edge_attr))
        return self.conv2(h, edge_index, edge_attr)


n_mol, n_atoms, r_max = 4, 12, 2.0
geometry = torch.randn(n_mol, n_atoms, 3)
forces = torch.randn(n_mol, n_atoms, 3)
features = torch.zeros(n_mol, n_atoms, 2)
features[:, :6, 0] = 1
features[:, 6:, 1] = 1

f = EnergyNet()
optim = torch.optim.Adam(f.parameters(), lr=1e-2)

for step in range(3):
    r = geometry.detach().clone()
    r.requires_grad_(True)
    out = 0
    for x, rk in zip(features, r):
        edge_index, edge_attr = neighbor_list_and_relative_vec(rk, r_max)
        out = out + f(x, edge_index, edge_attr).sum()
    pred_forces, = torch.autograd.grad(out, r, create_graph=True)
    loss = (pred_forces - forces).pow(2).sum(2).mean()
    print("loss {} = {}".format(step, loss.item()))
    optim.zero_grad()
    loss.backward()
    optim.step()
