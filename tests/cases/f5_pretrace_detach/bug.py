"""Model and optimizer come from a fixture, built before the trace starts; the step detaches features."""
import torch
from torch import nn


def setup():
    torch.manual_seed(0)
    model = nn.ModuleDict({"enc": nn.Linear(4, 8), "head": nn.Linear(8, 3)})
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    return model, opt


def step(model, opt):
    x, y = torch.randn(16, 4), torch.randint(0, 3, (16,))
    feats = torch.relu(model["enc"](x)).detach()  # <- detach
    loss = nn.functional.cross_entropy(model["head"](feats), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
