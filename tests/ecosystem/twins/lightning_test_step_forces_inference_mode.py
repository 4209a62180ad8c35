"""https://github.com/Lightning-AI/pytorch-lightning/issues/17653

The user trained a graph neural network on MD17 with Lightning: the model predicts an energy per molecule and
the forces are minus its gradient w.r.t. the atom positions, computed inside forward with
torch.autograd.grad under @torch.enable_grad() (graph.pos wrapped as a Variable with requires_grad=True).
Training worked, but in the test step the force computation failed ("element 0 of tensors does not require
grad..."), on every Lightning version from 1.7 on. Since 1.7 the Trainer runs test/predict under
torch.inference_mode() (Trainer(inference_mode=True) is the default), and unlike no_grad, inference mode is
not undone by torch.enable_grad(): the energy comes out without a graph, so autograd.grad has nothing to
differentiate. Fix (as the maintainers and the sibling reports pinns-torch#12, matgl#163 answer): build the
Trainer with inference_mode=False, so evaluation runs under no_grad, which enable_grad can lift.
"""
import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.loader import DataLoader
from torch_geometric.nn import global_add_pool


class MD17Model(pl.LightningModule):
    def __init__(self, hidden=16, lr=1e-2):
        super().__init__()
        self.lr = lr
        self.net = nn.Sequential(nn.Linear(1 + 3, hidden), nn.SiLU(), nn.Linear(hidden, 1))

    def forward(self, graph):
        graph.x = graph.x.float()
        energy, force = self.pred_energy_and_force(graph)
        return energy, force

    @torch.enable_grad()
    def pred_energy_and_force(self, graph):
        graph.pos = torch.autograd.Variable(graph.pos, requires_grad=True)
        atom_energy = self.net(torch.cat([graph.x, graph.pos], dim=-1))
        energy = global_add_pool(atom_energy, graph.batch).squeeze(-1)
        force = -torch.autograd.grad(energy.sum(), graph.pos, create_graph=True)[0]
        return energy, force

    def _loss(self, graph):
        energy, force = self(graph)
        return F.mse_loss(energy, graph.energy) + F.mse_loss(force, graph.force)

    def training_step(self, graph, batch_idx):
        loss = self._loss(graph)
        print(f"step {self.global_step} loss {loss.item():.6f}")
        return loss

    def test_step(self, graph, batch_idx):
        loss = self._loss(graph)
        print(f"test loss {loss.item():.6f}")
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.lr)


def make_molecules(n, atoms=5):
    return [Data(x=torch.randint(1, 9, (atoms, 1)), pos=torch.randn(atoms, 3), energy=torch.randn(1),
                 force=torch.randn(atoms, 3)) for _ in range(n)]


def main():
    pl.seed_everything(0, verbose=False)
    torch.set_num_threads(1)
    model = MD17Model()
    trainer = pl.Trainer(accelerator="cpu", devices=1, max_steps=3, logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)  # <- no_grad
    trainer.fit(model, DataLoader(make_molecules(12), batch_size=4))
    if os.environ.get("REALWORLD_STATE"):
        torch.save({n: p.detach().clone() for n, p in model.named_parameters()}, os.environ["REALWORLD_STATE"])
    trainer.test(model, DataLoader(make_molecules(4), batch_size=4), verbose=False)


if __name__ == "__main__":
    main()
