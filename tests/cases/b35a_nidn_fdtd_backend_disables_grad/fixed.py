# NIDN (esa/NIDN #53): a permittivity grid predicted by a small network is fed
# through a vendored torch FDTD solver to get a spectrum; the spectrum loss must
# train the network. The vendored fdtd backend switches autograd off when it is
# imported ("we don't need gradients (for now)").
import torch
import torch.nn as nn

# ---- vendored fdtd/backend.py (import-time setup) ----
torch.set_default_dtype(torch.float64)  # we need more precision for FDTD


# ---- vendored fdtd grid: 1D Yee scheme ----
class Grid:
    def __init__(self, n_cells, courant=0.5):
        self.n = n_cells
        self.courant = courant
        self.E = torch.zeros(n_cells)
        self.H = torch.zeros(n_cells)
        self.inverse_permittivity = torch.ones(n_cells)
        self.detector_values = []

    def set_permittivity(self, eps):
        self.inverse_permittivity = 1.0 / eps

    def step(self, t):
        curl_H = torch.cat([self.H[:1], self.H[1:] - self.H[:-1]])
        self.E = self.E + self.courant * self.inverse_permittivity * curl_H
        src = torch.zeros(self.n)
        src[5] = torch.sin(torch.tensor(0.3 * t))
        self.E = self.E + src
        curl_E = torch.cat([self.E[1:] - self.E[:-1], -self.E[-1:]])
        self.H = self.H + self.courant * curl_E
        self.detector_values.append(self.E[-5])

    def run(self, steps):
        for t in range(steps):
            self.step(t)
        return torch.stack(self.detector_values)


def compute_spectrum(eps, steps=120):
    grid = Grid(eps.shape[0])
    grid.set_permittivity(eps)
    signal = grid.run(steps)
    return torch.fft.rfft(signal).abs()[:20]


# ---- NIDN side: model predicts the eps grid ----
class EpsModel(nn.Module):
    def __init__(self, n_cells):
        super().__init__()
        self.coords = torch.linspace(-1, 1, n_cells).unsqueeze(1)
        self.net = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))

    def forward(self):
        return 1.0 + 3.0 * torch.sigmoid(self.net(self.coords)).squeeze(1)


torch.manual_seed(0)
n_cells = 40
model = EpsModel(n_cells)
target_spectrum = compute_spectrum(2.0 + torch.rand(n_cells))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

for it in range(2):
    optimizer.zero_grad()
    eps = model()
    spectrum = compute_spectrum(eps)
    loss = ((spectrum - target_spectrum) ** 2).mean()
    print("iter", it, "loss", loss.item(), "requires_grad", loss.requires_grad)
    loss.backward()
    optimizer.step()
    print("first layer grad:", model.net[0].weight.grad if model.net[0].weight.grad is None else model.net[0].weight.grad.norm())
