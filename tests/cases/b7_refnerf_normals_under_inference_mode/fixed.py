"""The fixed twin: validation runs under torch.no_grad(), where the model's enable_grad() block can still take
the normals with autograd.grad (kakaobrain/nerf-factory#22, inference_mode=False in the trainer)."""
import torch
import torch.nn.functional as F
from torch import nn


class RefNeRF(nn.Module):
    def __init__(self):
        super().__init__()
        self.density_net = nn.Sequential(nn.Linear(3, 32), nn.Softplus(), nn.Linear(32, 1))
        self.color_net = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 3), nn.Sigmoid())

    def forward(self, means):
        with torch.enable_grad():
            means = means.requires_grad_(True) if not means.requires_grad else means
            density = self.density_net(means)
            grad = torch.autograd.grad(density.sum(), means, create_graph=True)[0]
        normals = -F.normalize(grad, dim=-1)
        return self.color_net(torch.cat([means, normals], -1)) * torch.sigmoid(density)


torch.manual_seed(0)
model = RefNeRF()
optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
train_pts, train_rgb = torch.randn(128, 3), torch.rand(128, 3)
val_pts, val_rgb = torch.randn(32, 3), torch.rand(32, 3)
for epoch in range(3):
    loss = F.mse_loss(model(train_pts.clone()), train_rgb)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    model.eval()
    with torch.no_grad():
        val_loss = F.mse_loss(model(val_pts.clone()), val_rgb)
    model.train()
    print(f"epoch {epoch}: train {loss.item():.4f} val {val_loss.item():.4f}")
