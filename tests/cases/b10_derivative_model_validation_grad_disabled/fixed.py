"""The fixed twin: validation_step turns gradients back on for the forward that differentiates (Lightning-AI/pytorch-lightning#4487)."""
import torch
import torch.nn.functional as F
from torch import nn


class Feedforward(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.fc1 = nn.Linear(input_size, hidden_size)
        self.relu = nn.Tanh()
        self.fc2 = nn.Linear(hidden_size, 1)

    def forward(self, x):
        output = self.fc2(self.relu(self.fc1(x))).sum()
        return torch.autograd.grad(outputs=output, inputs=x, retain_graph=True, create_graph=True)[0]


class LitModel:
    def __init__(self):
        self.net = Feedforward(3, 16)

    def configure_optimizers(self):
        return torch.optim.Adam(self.net.parameters(), lr=1e-2)

    def training_step(self, batch):
        x, y = batch
        return F.mse_loss(self.net(x), y)

    def validation_step(self, batch):
        x, y = batch
        with torch.enable_grad():
            pred = self.net(x)
        return F.mse_loss(pred, y)


class Trainer:
    def fit(self, model, train_batches, val_batches, max_epochs=2):
        optimizer = model.configure_optimizers()
        for epoch in range(max_epochs):
            for batch in train_batches:
                loss = model.training_step(batch)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            with torch.set_grad_enabled(False):
                val_loss = sum(model.validation_step(batch) for batch in val_batches) / len(val_batches)
            print(f"epoch {epoch}: train loss {loss.item():.4f}, val loss {val_loss.item():.4f}")


torch.manual_seed(0)
train_batches = [(torch.rand((10, 3), requires_grad=True), torch.rand((10, 3))) for _ in range(4)]
val_batches = [(torch.rand((10, 3), requires_grad=True), torch.rand((10, 3)))]
Trainer().fit(LitModel(), train_batches, val_batches)
