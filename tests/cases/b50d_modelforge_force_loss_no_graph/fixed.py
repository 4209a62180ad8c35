# fix bug that resulted in force loss without gradient
# https://github.com/choderalab/modelforge/pull/240
# modelforge's TrainingAdapter computed the predicted forces as -dE/dR with
# torch.autograd.grad(..., create_graph=False, retain_graph=True). Without create_graph the
# returned force tensor has no graph back to the network weights, so the per-atom force term
# of the loss contributed nothing to the parameter gradients: the potential was trained on
# energies only although the loss reported a force error. The fix computes the forces with
# create_graph=True (later: create_graph=train_mode) so the force loss backpropagates.
from typing import Dict, List
import torch
from torch import nn


# ---- data (stand-in for modelforge.dataset BatchData / NNPInput / Metadata) -------------
class NNPInput:
    def __init__(self, atomic_numbers, positions, atomic_subsystem_indices):
        self.atomic_numbers = atomic_numbers
        self.positions = positions
        self.atomic_subsystem_indices = atomic_subsystem_indices


class Metadata:
    def __init__(self, E, F):
        self.E = E
        self.F = F


class BatchData:
    def __init__(self, nnp_input, metadata):
        self.nnp_input = nnp_input
        self.metadata = metadata


def collate_conformers(n_mols=4, atoms_per_mol=5):
    Z = torch.randint(1, 9, (n_mols * atoms_per_mol,))
    R = torch.randn(n_mols * atoms_per_mol, 3).requires_grad_(True)
    idx = torch.arange(n_mols).repeat_interleave(atoms_per_mol)
    E = torch.randn(n_mols, 1)
    F = torch.randn(n_mols * atoms_per_mol, 3)
    return BatchData(NNPInput(Z, R, idx), Metadata(E, F))


# ---- potential (SchNet-like: pair distances -> RBF -> per-atom energy -> sum) -----------
class SchNet(nn.Module):
    def __init__(self, number_of_atom_features=16, number_of_radial_basis_functions=8, cutoff=5.0):
        super().__init__()
        self.embedding = nn.Embedding(10, number_of_atom_features)
        self.centers = torch.linspace(0.0, cutoff, number_of_radial_basis_functions)
        self.filter = nn.Linear(number_of_radial_basis_functions, number_of_atom_features)
        self.energy_layer = nn.Sequential(
            nn.Linear(number_of_atom_features, number_of_atom_features), nn.SiLU(),
            nn.Linear(number_of_atom_features, 1))

    def forward(self, nnp_input: NNPInput) -> Dict[str, torch.Tensor]:
        idx = nnp_input.atomic_subsystem_indices
        pairs = (idx[:, None] == idx[None, :]).nonzero().t()
        pairs = pairs[:, pairs[0] != pairs[1]]
        r_ij = nnp_input.positions[pairs[1]] - nnp_input.positions[pairs[0]]
        d_ij = r_ij.norm(dim=1, keepdim=True)
        f_ij = torch.exp(-((d_ij - self.centers) ** 2))
        h = self.embedding(nnp_input.atomic_numbers)
        v = torch.zeros_like(h).index_add(0, pairs[0], self.filter(f_ij) * h[pairs[1]])
        E_i = self.energy_layer(h + v).squeeze(-1)
        n_mols = int(idx.max()) + 1
        E = torch.zeros(n_mols).index_add(0, idx, E_i)
        return {"per_molecule_energy": E}


# ---- loss (modelforge.train.training.Loss) ----------------------------------------------
class PerMoleculeSquaredError(nn.Module):
    def forward(self, predict, true, batch):
        return (predict - true).pow(2).mean()


class PerAtomSquaredError(nn.Module):
    def forward(self, predict, true, batch):
        return (predict - true).pow(2).sum(dim=1).mean()


class Loss(nn.Module):
    def __init__(self, loss_property: List[str], weight: Dict[str, float]):
        super().__init__()
        self.loss_property = loss_property
        self.weight = weight
        self.loss = nn.ModuleDict()
        for prop in loss_property:
            if prop == "per_atom_force":
                self.loss[prop] = PerAtomSquaredError()
            elif prop == "per_molecule_energy":
                self.loss[prop] = PerMoleculeSquaredError()

    def forward(self, predict_target, batch):
        loss_dict = {}
        loss = torch.tensor([0.0], dtype=batch.metadata.E.dtype, device=batch.metadata.E.device)
        for prop in self.loss_property:
            loss_ = self.weight[prop] * self.loss[prop](
                predict_target[f"{prop}_predict"], predict_target[f"{prop}_true"], batch
            )
            loss = loss + loss_
            loss_dict[f"{prop}/mse"] = loss_
        loss_dict["total_loss"] = loss
        return loss_dict


# ---- training adapter (modelforge.train.training.TrainingAdapter, Lightning removed) ----
class TrainingAdapter(nn.Module):
    def __init__(self, *, lr: float, loss_parameter: Dict):
        super().__init__()
        self.model = SchNet()
        self.learning_rate = lr
        self.loss = Loss(**loss_parameter)

    def _get_forces(self, batch: BatchData, energies: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        nnp_input = batch.nnp_input
        per_atom_force_true = batch.metadata.F.to(torch.float32)

        if per_atom_force_true.numel() < 1:
            raise RuntimeError("No force can be calculated.")

        per_molecule_energy_predict = energies["per_molecule_energy_predict"]

        # Ensure E_predict and nnp_input.positions require gradients and are on the same device
        if not per_molecule_energy_predict.requires_grad:
            per_molecule_energy_predict.requires_grad = True
        if not nnp_input.positions.requires_grad:
            nnp_input.positions.requires_grad = True

        # Compute the gradient (forces) from the predicted energies
        grad = torch.autograd.grad(
            per_molecule_energy_predict.sum(),
            nnp_input.positions,
            create_graph=True,
            retain_graph=True,
        )[0]
        per_atom_force_predict = -1 * grad  # Forces are the negative gradient of energy

        return {
            "per_atom_force_true": per_atom_force_true,
            "per_atom_force_predict": per_atom_force_predict,
        }

    def _get_energies(self, batch: BatchData) -> Dict[str, torch.Tensor]:
        nnp_input = batch.nnp_input
        per_molecule_energy_true = batch.metadata.E.to(torch.float32)
        per_molecule_energy_predict = self.model.forward(nnp_input)["per_molecule_energy"].unsqueeze(1)
        return {
            "per_molecule_energy_true": per_molecule_energy_true,
            "per_molecule_energy_predict": per_molecule_energy_predict,
        }

    def _get_predictions(self, batch: BatchData) -> Dict[str, torch.Tensor]:
        energies = self._get_energies(batch)
        forces = self._get_forces(batch, energies)
        return {**energies, **forces}

    def training_step(self, batch: BatchData, batch_idx: int) -> Dict[str, torch.Tensor]:
        predict_target = self._get_predictions(batch)
        loss_dict = self.loss(predict_target, batch)
        return loss_dict

    def configure_optimizers(self):
        return torch.optim.AdamW(self.model.parameters(), lr=self.learning_rate)


torch.manual_seed(0)
trainer = TrainingAdapter(
    lr=1e-3,
    loss_parameter={
        "loss_property": ["per_molecule_energy", "per_atom_force"],
        "weight": {"per_molecule_energy": 1.0, "per_atom_force": 1.0},
    },
)
optimizer = trainer.configure_optimizers()
batches = [collate_conformers() for _ in range(2)]

for epoch in range(3):
    for batch_idx, batch in enumerate(batches):
        loss_dict = trainer.training_step(batch, batch_idx)
        optimizer.zero_grad()
        loss_dict["total_loss"].backward()
        optimizer.step()
    print(f"epoch {epoch}: energy loss {loss_dict['per_molecule_energy/mse'].item():.4f}  "
          f"force loss {loss_dict['per_atom_force/mse'].item():.6f}")
