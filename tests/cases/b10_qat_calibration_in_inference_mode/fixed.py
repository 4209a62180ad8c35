"""The fixed twin: calibration runs under torch.no_grad(), so the encodings are ordinary tensors (quic/aimet#2026)."""
import torch
import torch.nn.functional as F
from torch import nn


class QuantizedLinear(nn.Module):
    def __init__(self, linear, bits=8):
        super().__init__()
        self.linear = linear
        self.qmax = 2 ** (bits - 1) - 1
        self.scale = None
        self.calibrating = False

    def forward(self, x):
        if self.calibrating:
            self.scale = x.abs().amax() / self.qmax
        x_scaled = x / self.scale
        x_q = (x_scaled + (torch.round(x_scaled) - x_scaled).detach()).clamp(-self.qmax - 1, self.qmax)
        return self.linear(x_q * self.scale)


class QuantSim(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = nn.Sequential(*[QuantizedLinear(m) if isinstance(m, nn.Linear) else m for m in model])

    def compute_encodings(self, batches):
        for m in self.model:
            if isinstance(m, QuantizedLinear):
                m.calibrating = True
        for batch in batches:
            self.model(batch)
        for m in self.model:
            if isinstance(m, QuantizedLinear):
                m.calibrating = False

    def forward(self, x):
        return self.model(x)


torch.manual_seed(0)
fp32_model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
sim = QuantSim(fp32_model)
calibration_batches = [torch.randn(32, 16) for _ in range(4)]
with torch.no_grad():
    sim.compute_encodings(calibration_batches)
optimizer = torch.optim.SGD(sim.parameters(), lr=1e-3)
x, y = torch.randn(64, 16), torch.randint(0, 4, (64,))
for step in range(3):
    loss = F.cross_entropy(sim(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"qat step {step}: loss {loss.item():.4f}")
