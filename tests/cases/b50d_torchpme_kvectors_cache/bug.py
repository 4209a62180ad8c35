# Caching destroys computational graph
# https://github.com/lab-cosmo/torch-pme/issues/62
# torch-pme's `Kvectors` cached the reciprocal-space vectors (kvectors) of the last cell and
# reused them when the next call had the same cell. The cached tensor still carried the
# autograd graph of the *first* cell; after the first backward() that graph is freed, so
# reusing the calculator on a new (but equal-valued) cell and calling backward() again raises
# "Trying to backward through the graph a second time". The fix removed the kvectors cache:
# the k-vectors are generated from the current `cell` on every call.
import torch


class Kvectors:
    """Reciprocal space vectors; cached to save time when consecutive cells are identical."""

    def __init__(self, for_ewald: bool = False):
        self.for_ewald = for_ewald

        # TorchScript requires to initialize all attributes in __init__
        self._cell_cache = torch.zeros(3, 3)
        self._ns_cache = torch.zeros(3)
        self._kvectors_cache = torch.zeros(1)

    def _generate_kvectors(self, ns: torch.Tensor, cell: torch.Tensor) -> torch.Tensor:
        inverse_cell = torch.linalg.inv(cell)

        reciprocal_cell = 2 * torch.pi * inverse_cell.T
        bx = reciprocal_cell[0]
        by = reciprocal_cell[1]
        bz = reciprocal_cell[2]

        kxs = bx * ns[0] * torch.fft.fftfreq(int(ns[0])).unsqueeze(-1)
        kys = by * ns[1] * torch.fft.fftfreq(int(ns[1])).unsqueeze(-1)
        if self.for_ewald:
            kzs = bz * ns[2] * torch.fft.fftfreq(int(ns[2])).unsqueeze(-1)
        else:
            kzs = bz * ns[2] * torch.fft.rfftfreq(int(ns[2])).unsqueeze(-1)

        return kxs[:, None, None] + kys[None, :, None] + kzs[None, None, :]

    def _get_kvectors(self, ns: torch.Tensor, cell: torch.Tensor) -> torch.Tensor:
        if ns.shape != (3,):
            raise ValueError(f"ns of shape {list(ns.shape)} should be of shape (3, )")
        if cell.shape != (3, 3):
            raise ValueError(f"cell of shape {list(cell.shape)} should be of shape (3, 3)")

        dtype = cell.dtype
        device = cell.device

        # Use chached values if cell and number of mesh points have not changed since
        # last call.
        self._cell_cache = self._cell_cache.to(dtype=dtype, device=device)
        self._ns_cache = self._ns_cache.to(dtype=dtype, device=device)

        same_cell = torch.allclose(cell, self._cell_cache, atol=1e-15, rtol=1e-15)
        if torch.all(ns == self._ns_cache) and same_cell:
            kvectors = self._kvectors_cache  # <- autograd_error
        else:
            kvectors = self._generate_kvectors(ns=ns, cell=cell)

            # Store values for the cache. We do not clone the arrays because we only
            # read the value and do not perform any inplace operations
            self._cell_cache = cell
            self._ns_cache = ns
            self._kvectors_cache = kvectors

        return kvectors

    def compute(self, ns: torch.Tensor, cell: torch.Tensor) -> torch.Tensor:
        kvectors = self._get_kvectors(ns=ns, cell=cell)
        if self.for_ewald:
            return kvectors.reshape(-1, 3)
        return kvectors


class PMEPotential(torch.nn.Module):
    def __init__(self, exponent=1.0, atomic_smearing=None, mesh_spacing=None,
                 interpolation_order=3, subtract_interior=False):
        super().__init__()
        self.exponent = exponent
        self.atomic_smearing = atomic_smearing
        self.mesh_spacing = mesh_spacing
        self.interpolation_order = interpolation_order
        self.subtract_interior = subtract_interior
        self.kvectors = Kvectors(for_ewald=False)

    def _compute_lr(self, positions, charges, cell, smearing, lr_wavelength):
        # Step 0: number of mesh points along each cell vector
        k_cutoff = 2 * torch.pi / lr_wavelength
        basis_norms = torch.linalg.norm(cell, dim=1)
        ns_approx = k_cutoff * basis_norms / 2 / torch.pi
        ns_actual_approx = 2 * ns_approx + 1
        ns = 2 ** torch.ceil(torch.log2(ns_actual_approx)).long()

        # Step 2.1: k-vectors and kernel G(k)
        kvectors = self.kvectors.compute(ns=ns, cell=cell).reshape(-1, 3)
        knorm_sq = torch.sum(kvectors**2, dim=1)
        mask = knorm_sq > 0
        kvectors, knorm_sq = kvectors[mask], knorm_sq[mask]
        ivolume = 1 / cell.det()
        G = 4 * torch.pi / knorm_sq * torch.exp(-0.5 * smearing**2 * knorm_sq) * ivolume

        # Steps 1-3 (mesh interpolation + FFT) written as a direct structure-factor sum
        trig_args = positions @ kvectors.T                     # (n_atoms, n_k)
        c, s = torch.cos(trig_args), torch.sin(trig_args)
        re_S = (charges * c).sum(dim=0)
        im_S = (charges * s).sum(dim=0)
        potential = (c * (G * re_S) + s * (G * im_S)).sum(dim=1, keepdim=True)

        # Step 4: remove self contribution
        self_contrib = torch.sqrt(torch.tensor(2.0 / (torch.pi * smearing**2)))
        return potential - charges * self_contrib

    def forward(self, positions, charges, cell, neighbor_indices, neighbor_distances):
        smearing = self.atomic_smearing
        mesh_spacing = self.mesh_spacing if self.mesh_spacing is not None else smearing / 8.0
        potential_lr = self._compute_lr(positions, charges, cell, smearing, mesh_spacing)
        # no neighbors are given, so the short-range part is zero
        return potential_lr / 2


torch.manual_seed(0)
sr_cutoff = 5.5

calculator = PMEPotential(
    exponent=1.0,
    atomic_smearing=sr_cutoff / 5.0,
    mesh_spacing=1.0,
    interpolation_order=3,
    subtract_interior=False,
)

positions = 5 * torch.rand((20, 3), requires_grad=True)
cell = 5 * torch.eye(3, requires_grad=True)
charges = torch.rand((20, 1))
neighbor_indices = torch.zeros((0, 2), dtype=torch.int64)
neighbor_distances = torch.zeros((0))

output = calculator(positions, charges, cell, neighbor_indices, neighbor_distances)
output = output.sum()
output.backward()
print("first call ok, energy =", output.item())

# reuse the calculator on a new structure with the same cell
positions = 5 * torch.rand((20, 3), requires_grad=True)
cell = 5 * torch.eye(3, requires_grad=True)
charges = torch.rand((20, 1))

output = calculator(positions, charges, cell, neighbor_indices, neighbor_distances)
output = output.sum()
output.backward()
print("second call ok, energy =", output.item())
