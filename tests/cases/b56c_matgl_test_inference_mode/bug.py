# Error when trying trainer.test  (materialyzeai/matgl issue #163)
# https://github.com/materialyzeai/matgl/issues/163
# A user trained an M3GNet potential with matgl's PotentialLightningModule (energies + forces,
# forces = -dE/dpos via torch.autograd.grad inside Potential.forward). fit() and validation ran,
# but trainer.test(...) raised "RuntimeError: element 0 of tensors does not require grad and
# does not have a grad_fn". Lightning's Trainer runs test under torch.inference_mode() by
# default, and the torch.set_grad_enabled(True) in the module's step() cannot undo inference
# mode, so the energy carried no graph and the force autograd.grad failed.
# Fix (maintainer, in the example notebook and unit test): build the Trainer with
# inference_mode=False so the eval loops use no_grad, which step() re-enables.
# Lightning's Trainer and matgl's classes are rewritten here as small plain-torch code.
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class M3GNet(nn.Module):
    """Tiny stand-in for matgl's M3GNet: species embedding + radial message passing."""

    def __init__(self, num_elements=2, dim=16, num_rbf=8, cutoff=4.0):
        super().__init__()
        self.embedding = nn.Embedding(num_elements, dim)
        self.register_buffer("centers", torch.linspace(0.0, cutoff, num_rbf))
        self.rbf_mlp = nn.Sequential(nn.Linear(num_rbf, dim), nn.SiLU())
        self.readout = nn.Sequential(nn.Linear(dim, dim), nn.SiLU(), nn.Linear(dim, 1))

    def forward(self, node_type, pos, edge_index):
        src, dst = edge_index
        bond_vec = pos[dst] - pos[src]
        bond_dist = bond_vec.norm(dim=1, keepdim=True)
        rbf = torch.exp(-((bond_dist - self.centers) ** 2))
        h = self.embedding(node_type)
        msg = self.rbf_mlp(rbf) * h[src]
        h = h + torch.zeros_like(h).index_add(0, dst, msg)
        return self.readout(h).sum()


class Potential(nn.Module):
    """matgl.apps.pes.Potential: energy and forces = -dE/dpos."""

    def __init__(self, model, calc_forces=True):
        super().__init__()
        self.model = model
        self.calc_forces = calc_forces

    def forward(self, node_type, frac_coords, lattice, edge_index):
        pos = frac_coords @ lattice
        pos.requires_grad_(True)
        total_energies = self.model(node_type, pos, edge_index)
        forces = torch.zeros(1)
        if self.calc_forces:
            grads = torch.autograd.grad(
                total_energies, [pos], grad_outputs=torch.ones_like(total_energies), create_graph=True, retain_graph=True
            )
            forces = -grads[0]
        return total_energies, forces


class PotentialLightningModule(nn.Module):
    def __init__(self, model, energy_weight=1.0, force_weight=1.0, lr=1e-3):
        super().__init__()
        self.model = Potential(model=model)
        self.energy_weight = energy_weight
        self.force_weight = force_weight
        self.lr = lr

    def forward(self, node_type, frac_coords, lattice, edge_index):
        return self.model(node_type, frac_coords, lattice, edge_index)

    def step(self, batch):
        torch.set_grad_enabled(True)
        node_type, frac_coords, lattice, edge_index, energy, forces = batch
        e_pred, f_pred = self(node_type, frac_coords, lattice, edge_index)
        num_atoms = node_type.numel()
        e_loss = F.mse_loss(e_pred / num_atoms, energy / num_atoms)
        f_loss = F.mse_loss(f_pred, forces)
        return {"Total_Loss": self.energy_weight * e_loss + self.force_weight * f_loss, "Force_Loss": f_loss}

    def training_step(self, batch, batch_idx):
        return self.step(batch)["Total_Loss"]

    def validation_step(self, batch, batch_idx):
        return self.step(batch)["Total_Loss"]

    def test_step(self, batch, batch_idx):
        return self.step(batch)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.lr, eps=1e-8)


class Trainer:
    """The parts of lightning.Trainer the script goes through."""

    def __init__(self, max_epochs=1, accelerator="cpu", inference_mode=True):
        self.max_epochs = max_epochs
        self.inference_mode = inference_mode

    def fit(self, model, train_dataloaders, val_dataloaders):
        optimizer = model.configure_optimizers()
        for epoch in range(self.max_epochs):
            model.train()
            for batch_idx, batch in enumerate(train_dataloaders):
                loss = model.training_step(batch, batch_idx)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            model.eval()
            with torch.no_grad():  # validation inside fit() runs under no_grad
                val = [model.validation_step(b, i).item() for i, b in enumerate(val_dataloaders)]
            print(f"epoch {epoch}: train_loss {loss.item():.4f} val_loss {sum(val) / len(val):.4f}")

    def test(self, model, dataloaders):
        model.eval()
        context = torch.inference_mode() if self.inference_mode else torch.no_grad()
        with context:
            for batch_idx, batch in enumerate(dataloaders):
                results = model.test_step(batch, batch_idx)
                print(f"test batch {batch_idx}: Total_Loss {results['Total_Loss'].item():.4f}")


def make_structure(n_atoms=6):
    node_type = torch.randint(0, 2, (n_atoms,))
    frac_coords = torch.rand(n_atoms, 3)
    lattice = torch.eye(3) * 3.0
    src, dst = torch.meshgrid(torch.arange(n_atoms), torch.arange(n_atoms), indexing="ij")
    mask = src != dst
    edge_index = torch.stack([src[mask], dst[mask]])
    energy = torch.randn(()) * n_atoms
    forces = torch.randn(n_atoms, 3) * 0.1
    return node_type, frac_coords, lattice, edge_index, energy, forces


train_loader = [make_structure() for _ in range(4)]
val_loader = [make_structure() for _ in range(2)]
test_loader = [make_structure() for _ in range(2)]

model = M3GNet()
lit_module = PotentialLightningModule(model=model, lr=1e-3)
trainer = Trainer(max_epochs=2, accelerator="cpu")  # <- no_grad
trainer.fit(model=lit_module, train_dataloaders=train_loader, val_dataloaders=val_loader)
trainer.test(model=lit_module, dataloaders=test_loader)
