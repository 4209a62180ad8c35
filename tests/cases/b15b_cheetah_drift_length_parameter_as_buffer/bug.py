"""Cheetah accelerator elements (desy-ml/cheetah#302, fixed by PR #303,
https://github.com/desy-ml/cheetah/issues/302): a torch.nn.Parameter passed to an element's constructor
(`Drift(length=nn.Parameter(...))`) is stored with `self.register_buffer("length", torch.as_tensor(length))`,
so it lands in the module's buffers, not its parameters. `segment.parameters()` never lists it: the
drift length gets a gradient from the beam loss but the optimizer never updates it, while a parameter
assigned after construction (`quad.k1 = nn.Parameter(...)`) does train. The fix registers a Parameter
as a parameter (register_buffer_or_parameter)."""
import torch
from torch import nn


class Element(nn.Module):
    def __init__(self, name=None):
        super().__init__()
        self.name = name

    def transfer_map(self, energy):
        raise NotImplementedError

    def track(self, particles, energy):
        return particles @ self.transfer_map(energy).transpose(-1, -2)


class Drift(Element):
    def __init__(self, length, name=None, dtype=torch.float32):
        super().__init__(name=name)
        self.register_buffer("length", torch.as_tensor(length, dtype=dtype))  # <- non_parameter_tensor

    def transfer_map(self, energy):
        tm = torch.eye(4, dtype=self.length.dtype)
        tm = tm + self.length * torch.tensor([[0.0, 1.0, 0.0, 0.0], [0.0] * 4, [0.0, 0.0, 0.0, 1.0], [0.0] * 4])
        return tm


class Quadrupole(Element):
    def __init__(self, length, k1=0.0, name=None, dtype=torch.float32):
        super().__init__(name=name)
        self.register_buffer("length", torch.as_tensor(length, dtype=dtype))
        self.register_buffer("k1", torch.as_tensor(k1, dtype=dtype))

    def transfer_map(self, energy):
        kl = self.k1 * self.length  # thin-lens kick
        tm = torch.eye(4, dtype=self.length.dtype)
        tm = tm + kl * torch.tensor([[0.0] * 4, [-1.0, 0.0, 0.0, 0.0], [0.0] * 4, [0.0, 0.0, 1.0, 0.0]])
        return tm


class Segment(Element):
    def __init__(self, elements, name=None):
        super().__init__(name=name)
        self.elements = nn.ModuleList(elements)

    def track(self, particles, energy):
        for element in self.elements:
            particles = element.track(particles, energy)
        return particles


torch.manual_seed(0)
drift = Drift(length=nn.Parameter(torch.tensor(0.5)), name="D1")
quad = Quadrupole(length=torch.tensor(0.2), name="Q1")
quad.k1 = nn.Parameter(torch.tensor(1.0))  # assigned after construction: registered as a parameter
segment = Segment([quad, drift])

incoming = torch.randn(64, 4) * 1e-3
energy = torch.tensor(1e8)
optimizer = torch.optim.Adam(segment.parameters(), lr=0.05)
print("trainable:", [n for n, _ in segment.named_parameters()])
length_before = drift.length.detach().clone()
for step in range(20):
    optimizer.zero_grad()
    outgoing = segment.track(incoming, energy)
    loss = outgoing[:, 0].pow(2).mean() * 1e6  # focus the beam at the screen
    loss.backward()
    optimizer.step()
print(f"loss {loss.item():.4f}; k1 {quad.k1.item():.3f}")
print(f"drift length grad {drift.length.grad}; changed: {not torch.equal(length_before, drift.length.detach())}")
