"""MACE training scripts (ACEsuit/mace#1529, https://github.com/ACEsuit/mace/pull/1529): PolarMACE models
trained from scratch kept lr_source_maps, fukui_source_map, ... at their initial values.
Why: get_params_options builds the optimizer's param groups by submodule name (embedding, interactions,
products, readouts) instead of from model.parameters(); submodules it does not know are silently left out,
so their weights get gradients but no optimizer steps them.
Fix: register the optional submodules (lr_source_maps, fukui_source_map, ...) as param groups too."""
from types import SimpleNamespace

import torch
from torch import nn


class ScaleShiftMACE(nn.Module):
    def __init__(self):
        super().__init__()
        self.node_embedding = nn.Linear(4, 16)
        self.interactions = nn.ModuleList([nn.ModuleDict({"linear": nn.Linear(16, 16), "skip": nn.Linear(16, 16)})])
        self.products = nn.ModuleList([nn.Linear(16, 16)])
        self.readouts = nn.ModuleList([nn.Linear(16, 1)])


class PolarMACE(ScaleShiftMACE):
    def __init__(self):
        super().__init__()
        self.lr_source_maps = nn.ModuleList([nn.Linear(16, 1)])
        self.fukui_source_map = nn.Linear(16, 1)

    def forward(self, node_attrs):
        h = self.node_embedding(node_attrs)
        for interaction, product in zip(self.interactions, self.products):
            h = product(torch.tanh(interaction["linear"](h)) + interaction["skip"](h))
        energy = self.readouts[0](h).sum()
        charges = self.lr_source_maps[0](h) + self.fukui_source_map(h)
        return energy, charges


def get_params_options(args, model):
    decay_interactions, no_decay_interactions = {}, {}
    for name, param in model.interactions.named_parameters():
        (decay_interactions if "linear.weight" in name else no_decay_interactions)[name] = param
    param_options = dict(
        params=[
            {"name": "embedding", "params": model.node_embedding.parameters(), "weight_decay": 0.0},
            {"name": "interactions_decay", "params": list(decay_interactions.values()), "weight_decay": args.weight_decay},
            {"name": "interactions_no_decay", "params": list(no_decay_interactions.values()), "weight_decay": 0.0},
            {"name": "products", "params": model.products.parameters(), "weight_decay": args.weight_decay},
            {"name": "readouts", "params": model.readouts.parameters(), "weight_decay": 0.0},  # <- optimizer
        ],
        lr=args.lr,
        amsgrad=args.amsgrad,
    )
    return param_options


torch.manual_seed(0)
args = SimpleNamespace(lr=0.01, weight_decay=5e-7, amsgrad=True)
model = PolarMACE()
optimizer = torch.optim.Adam(**get_params_options(args, model))
node_attrs, ref_energy, ref_charges = torch.randn(10, 4), torch.tensor(1.5), torch.randn(10, 1)
fukui_before = model.fukui_source_map.weight.detach().clone()
for step in range(5):
    energy, charges = model(node_attrs)
    loss = (energy - ref_energy) ** 2 + ((charges - ref_charges) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("fukui_source_map has grad:", model.fukui_source_map.weight.grad is not None,
      "changed:", not torch.equal(fukui_before, model.fukui_source_map.weight))
