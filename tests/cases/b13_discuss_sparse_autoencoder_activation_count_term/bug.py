"""discuss.pytorch.org "Autoencoder: sparsity term" (t/96005): a sparse autoencoder adds a KL sparsity penalty on the
4-unit bottleneck to the MSE reconstruction loss, but measures each unit's activation frequency by counting
`(encoded > 0).sum(dim=0)`: the comparison has no gradient, so the KL term is a constant and the encoder is trained by
the reconstruction term alone (the penalty never changes which units fire). The fix: a differentiable activation
estimate, the batch mean of sigmoid(encoded), as the same author's earlier thread (t/81990) computes it."""
import torch
import torch.nn.functional as F
from torch import nn

context_dimension, output_neurons, RHO, BETA = 20, 4, 0.25, 0.5


class SparseAutoencoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc1, self.enc2 = nn.Linear(context_dimension, 80), nn.Linear(80, 40)
        self.enc3 = nn.Linear(40, output_neurons)
        self.dec1, self.dec2 = nn.Linear(output_neurons, 40), nn.Linear(40, 80)
        self.dec3 = nn.Linear(80, context_dimension)

    def forward(self, x):
        y = F.relu(self.enc3(F.relu(self.enc2(F.relu(self.enc1(x))))))
        return y, F.relu(self.dec3(F.relu(self.dec2(F.relu(self.dec1(y))))))


def kl_divergence(p, q):
    return torch.sum(p * torch.log(p / q)) + torch.sum((1 - p) * torch.log((1 - p) / (1 - q)))


torch.manual_seed(0)
model = SparseAutoencoder()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
data = torch.rand(32, context_dimension)
for epoch in range(3):
    optimizer.zero_grad()
    encoded, outputs = model(data)
    mse_loss = F.mse_loss(outputs, data)
    rho_hat = (encoded > 0).sum(dim=0)  # <- cut_term
    rho_hat = torch.div(rho_hat, data.shape[0])
    rho_hat = rho_hat.clamp(1e-6, 1 - 1e-6)
    kl_loss = kl_divergence(torch.full_like(rho_hat, RHO), rho_hat)
    loss = mse_loss + BETA * kl_loss
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch}: mse {mse_loss.item():.4f} kl {kl_loss.item():.4f} kl requires grad: {kl_loss.requires_grad}")
