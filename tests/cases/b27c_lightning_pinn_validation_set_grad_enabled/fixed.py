"""Lightning-AI/pytorch-lightning issue #15765 "Enable gradients in validation_step",
https://github.com/Lightning-AI/pytorch-lightning/issues/15765: a physics-informed network learning the cosine
(the loss is the residual sin(x) - du/dx, du/dx taken by torch.autograd.grad) trains, but validation_step cannot
take du/dx; the reporter wrapped the step in `with torch.set_grad_enabled(True)` "but of course that didn't work".
Why: since Lightning 1.7 the Trainer runs validation under torch.inference_mode() (inference_mode=True by
default); grad mode switched back on inside inference mode still records nothing, so autograd.grad raises
"element 0 of tensors does not require grad and does not have a grad_fn". Fix: Trainer(inference_mode=False),
so validation runs under no_grad, which set_grad_enabled(True) lifts. A minimal Trainer stands in for Lightning's."""
import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)


class Trainer:
    def __init__(self, max_epochs=3, inference_mode=True):
        self.max_epochs, self.inference_mode = max_epochs, inference_mode

    def fit(self, model, train_batches, val_batches):
        optimizer = model.configure_optimizers()
        for epoch in range(self.max_epochs):
            for batch_idx, batch in enumerate(train_batches):
                loss = model.training_step(batch, batch_idx)["loss"]
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            with torch.inference_mode(self.inference_mode), torch.no_grad():
                outs = [model.validation_step(batch, i)["loss"] for i, batch in enumerate(val_batches)]
            print(f"epoch {epoch}: train loss {loss.item():.4f}  val physics loss {torch.stack(outs).mean():.4f}")


class CosinePINN(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1))

    def forward(self, x, t):
        return self.net(torch.cat([x, t], dim=1))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-2)

    def physics_loss(self, x, t):
        u_hat = self.forward(x, t)
        dydx = torch.autograd.grad(u_hat, x, grad_outputs=torch.ones_like(u_hat), create_graph=True)[0]
        return ((torch.sin(x) - dydx) ** 2).mean()

    def training_step(self, batch, batch_idx):
        x, t = batch
        return {"loss": self.physics_loss(x, t)}

    def validation_step(self, batch, batch_idx):
        x, t = batch
        with torch.set_grad_enabled(True):
            physics_loss = self.physics_loss(x, t)
        return {"loss": physics_loss.detach()}


def make_batch(n=64):
    return torch.rand(n, 1).mul(6.28).requires_grad_(True), torch.rand(n, 1)


model = CosinePINN()
trainer = Trainer(max_epochs=3, inference_mode=False)
trainer.fit(model, [make_batch() for _ in range(8)], [make_batch()])
