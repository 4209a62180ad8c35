"""A network whose output is a derivative, trained with PyTorch Lightning (Lightning-AI/pytorch-lightning#4487):
forward returns torch.autograd.grad of the network's output with respect to its input (create_graph=True); training
works, but Lightning runs validation under torch.set_grad_enabled(False), where the output has no grad_fn, and
autograd.grad raises "element 0 of tensors does not require grad and does not have a grad_fn" (the reporter's
workaround: torch.set_grad_enabled(True) at the start of validation_step). A small Trainer stands in for Lightning's
loops."""
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
        pred = self.net(x)  # <- no_grad
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
