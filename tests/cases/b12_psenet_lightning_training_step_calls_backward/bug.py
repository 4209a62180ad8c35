"""PSENet image enhancement trained with PyTorch Lightning (VinAIResearch/PSENet-Image-Enhancement#1): the user added
`loss.backward()` inside `training_step` and training fails with "RuntimeError: Trying to backward through the graph
a second time". The author: "Do you use pytorch lightning for training. If yes, the loss.backward() will be handled
automatically by the library. Putting this line into training code will cause error". The loop below is Lightning's
automatic optimisation in miniature: it calls backward on the loss that training_step returns."""
import torch
import torch.nn.functional as F
from torch import nn


class PSENet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 3, 3, padding=1))

    def forward(self, x):
        return torch.sigmoid(x + self.net(x))

    def training_step(self, batch, batch_idx):
        low, ref = batch
        enhanced = self(low)
        loss = F.l1_loss(enhanced, ref) + 0.1 * (enhanced.mean() - 0.5).abs()
        loss.backward()  # <- autograd_error
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def fit(module, batches):
    optimizer = module.configure_optimizers()
    for batch_idx, batch in enumerate(batches):
        optimizer.zero_grad()
        loss = module.training_step(batch, batch_idx)
        loss.backward()
        optimizer.step()


torch.manual_seed(0)
model = PSENet()
batches = [(torch.rand(2, 3, 16, 16) * 0.3, torch.rand(2, 3, 16, 16)) for _ in range(3)]
before = model.net[0].weight.detach().clone()
fit(model, batches)
print(f"conv grad set: {model.net[0].weight.grad is not None}; changed: {not torch.equal(model.net[0].weight, before)}")
