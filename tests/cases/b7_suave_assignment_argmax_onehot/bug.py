"""A mixture VAE (xuxu-wei/SUAVE#65): the straight-through gumbel_softmax(hard=True) that picked the mixture
component was replaced by argmax + one_hot, so the reconstruction no longer reaches the assignment head; only the
KL to the uniform prior trains it, and the components it picks never improve the reconstruction."""
import torch
import torch.nn.functional as F
from torch import nn

K, D, Z = 3, 8, 2


class MixtureVAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(D, 16)
        self.assign_head = nn.Linear(16, K)
        self.component_means = nn.Parameter(torch.randn(K, D))
        self.decoder = nn.Linear(Z, D)
        self.to_z = nn.Linear(16, Z)

    def forward(self, x):
        h = torch.tanh(self.encoder(x))
        component_logits = self.assign_head(h)
        posterior_weights = component_logits.softmax(-1)
        assignments = F.one_hot(component_logits.argmax(dim=-1), K).float()  # <- cut_term
        recon = self.decoder(self.to_z(h)) + assignments @ self.component_means
        return recon, posterior_weights


torch.manual_seed(0)
model = MixtureVAE()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randn(64, D) + 3 * torch.randint(0, K, (64, 1)).float()
for step in range(30):
    recon, weights = model(x)
    recon_loss = F.mse_loss(recon, x)
    kl = (weights * (weights.clamp_min(1e-8).log() - torch.log(torch.tensor(1.0 / K)))).sum(-1).mean()
    loss = recon_loss + 0.1 * kl
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
recon, _ = model(x)
grad = torch.autograd.grad(F.mse_loss(recon, x), model.assign_head.weight, allow_unused=True)[0]
print(f"recon {F.mse_loss(recon, x).item():.3f}; reconstruction reaches the assignment head: {grad is not None}")
