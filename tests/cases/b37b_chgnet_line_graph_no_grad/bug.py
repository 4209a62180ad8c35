# CHGNet-style potential (matgl PyG port): two-body bond energies plus three-body angle terms
# built on a directed line graph. Forces are -dE/dpos by autograd and enter the loss.
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_default_dtype(torch.float64)


def create_directed_line_graph(edge_index, bond_vec, bond_dist, threebody_cutoff):
    # bonds short enough to take part in three-body interactions
    edge_ids = torch.nonzero(bond_dist < threebody_cutoff).squeeze(-1)
    src = edge_index[0, edge_ids]
    same_center = (src[:, None] == src[None, :]) & ~torch.eye(len(edge_ids), dtype=torch.bool)
    lg_src, lg_dst = torch.nonzero(same_center, as_tuple=True)
    lg_edge_index = torch.stack([lg_src, lg_dst])
    lg_bond_vec = bond_vec[edge_ids]
    lg_bond_dist = bond_dist[edge_ids]
    lg_src_bond_sign = torch.ones(len(edge_ids), 1)
    return lg_edge_index, lg_bond_vec, lg_bond_dist, lg_src_bond_sign, edge_ids


def compute_theta(lg_edge_index, lg_bond_vec, lg_bond_dist, lg_src_bond_sign):
    v1 = lg_bond_vec[lg_edge_index[0]] * lg_src_bond_sign[lg_edge_index[0]]
    v2 = lg_bond_vec[lg_edge_index[1]]
    cos = (v1 * v2).sum(-1) / (lg_bond_dist[lg_edge_index[0]] * lg_bond_dist[lg_edge_index[1]])
    return cos.clamp(-1 + 1e-7, 1 - 1e-7)


class CHGNetLike(nn.Module):
    def __init__(self, cutoff=5.0, three_body_cutoff=3.0, n_basis=16):
        super().__init__()
        self.cutoff, self.three_body_cutoff = cutoff, three_body_cutoff
        self.register_buffer("centers", torch.linspace(0.0, cutoff, n_basis))
        self.bond_mlp = nn.Sequential(nn.Linear(n_basis, 32), nn.SiLU(), nn.Linear(32, 32))
        self.angle_mlp = nn.Sequential(nn.Linear(8, 32), nn.SiLU(), nn.Linear(32, 32))
        self.readout = nn.Sequential(nn.Linear(32, 32), nn.SiLU(), nn.Linear(32, 1))

    def forward(self, pos, edge_index):
        bond_vec = pos[edge_index[1]] - pos[edge_index[0]]
        bond_dist = bond_vec.norm(dim=-1)
        bond_feat = self.bond_mlp(torch.exp(-((bond_dist[:, None] - self.centers) ** 2)))

        with torch.no_grad():
            lg_edge_index, lg_bond_vec, lg_bond_dist, lg_src_bond_sign, edge_ids = create_directed_line_graph(edge_index, bond_vec, bond_dist, self.three_body_cutoff)  # <- no_grad

        cos_theta = compute_theta(lg_edge_index, lg_bond_vec, lg_bond_dist, lg_src_bond_sign)
        angle_basis = torch.stack([torch.cos(k * torch.arccos(cos_theta)) for k in range(8)], dim=-1)
        three_body = self.angle_mlp(angle_basis) * bond_feat[edge_ids][lg_edge_index[1]]
        bond_update = torch.zeros(len(edge_ids), 32).index_add(0, lg_edge_index[0], three_body)
        bond_feat = bond_feat.index_add(0, edge_ids, bond_update)

        atom_feat = torch.zeros(pos.shape[0], 32).index_add(0, edge_index[0], bond_feat)
        return self.readout(atom_feat).sum()


n_atoms = 8
pos0 = 1.6 * torch.randn(n_atoms, 3)
ii, jj = torch.meshgrid(torch.arange(n_atoms), torch.arange(n_atoms), indexing="ij")
with torch.no_grad():
    keep = (ii != jj) & ((pos0[ii] - pos0[jj]).norm(dim=-1) < 5.0)
edge_index = torch.stack([ii[keep], jj[keep]])
e_target, f_target = torch.tensor(-10.0), torch.randn(n_atoms, 3)

model = CHGNetLike()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(3):
    pos = pos0.clone().requires_grad_(True)
    energy = model(pos, edge_index)
    forces = -torch.autograd.grad(energy, pos, create_graph=True)[0]
    loss = (energy - e_target) ** 2 + ((forces - f_target) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.4f}")

# consistency check: autograd force vs. central finite difference of the energy
pos = pos0.clone().requires_grad_(True)
f_auto = -torch.autograd.grad(model(pos, edge_index), pos)[0]
h = 1e-5
f_fd = torch.zeros_like(pos0)
with torch.no_grad():
    for a in range(n_atoms):
        for d in range(3):
            dp = torch.zeros_like(pos0)
            dp[a, d] = h
            f_fd[a, d] = -(model(pos0 + dp, edge_index) - model(pos0 - dp, edge_index)) / (2 * h)
print("max |F_autograd - F_finite_diff| =", (f_auto - f_fd).abs().max().item())
