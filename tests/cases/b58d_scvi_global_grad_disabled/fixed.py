# Report: "scVI training does not play nicely with other torch code"
#   https://github.com/scverse/scvi-tools/issues/214
# What went wrong: module scvi.inference.trainer called torch.set_grad_enabled(False) at import time (to
#   avoid building graphs in the metric/posterior helpers), and re-enabled grad only inside its own training
#   loop. Any other torch code run after `import scvi.inference` silently built no graph, so the user's own
#   model got no gradient (backward raised "element 0 of tensors does not require grad").
# Fix: delete the module-level torch.set_grad_enabled(False) and annotate the helper methods that must not
#   track gradients with @torch.no_grad() instead (e.g. Trainer.compute_metrics).
# The scvi module is inlined below as plain torch (tiny VAE, Trainer / UnsupervisedTrainer names kept).
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

# ---- scvi/inference/trainer.py (imported by `from scvi.inference import UnsupervisedTrainer`) ----


class VAE(nn.Module):
    def __init__(self, n_input, n_latent=2):
        super().__init__()
        self.encoder = nn.Linear(n_input, 2 * n_latent)
        self.decoder = nn.Linear(n_latent, n_input)

    def forward(self, x):
        mu, logvar = self.encoder(torch.log1p(x)).chunk(2, dim=-1)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        recon = F.mse_loss(self.decoder(z), torch.log1p(x), reduction="none").sum(-1)
        kl = -0.5 * (1 + logvar - mu ** 2 - logvar.exp()).sum(-1)
        return recon, kl


class Trainer:
    def __init__(self, model, gene_dataset, frequency=1):
        self.model = model
        self.gene_dataset = gene_dataset
        self.frequency = frequency
        self.history = {"elbo_train_set": []}

    @torch.no_grad()
    def compute_metrics(self):
        self.model.eval()
        recon, kl = self.model(self.gene_dataset)
        self.history["elbo_train_set"].append((recon + kl).mean().item())
        self.model.train()

    def train(self, n_epochs=3, lr=1e-2):
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.compute_metrics()
        with torch.set_grad_enabled(True):
            for epoch in range(n_epochs):
                for tensors in self.gene_dataset.split(8):
                    self.in_training_loop(tensors)
                self.compute_metrics()

    def in_training_loop(self, tensors):
        loss = self.loss(tensors)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()


class UnsupervisedTrainer(Trainer):
    def loss(self, tensors):
        recon, kl = self.model(tensors)
        return (recon + kl).mean()
# ---- end of scvi/inference/trainer.py ----


# user script: fit scVI, then train an own torch model on the latent space
gene_dataset = torch.poisson(torch.full((32, 10), 3.0))
vae = VAE(n_input=10)
trainer = UnsupervisedTrainer(vae, gene_dataset)
trainer.train(n_epochs=3)
print("scVI elbo history:", [round(v, 2) for v in trainer.history["elbo_train_set"]])

classifier = nn.Linear(10, 2)
optimizer = torch.optim.SGD(classifier.parameters(), lr=0.1)
labels = torch.randint(0, 2, (32,))
logits = classifier(torch.log1p(gene_dataset))
loss = F.cross_entropy(logits, labels)
optimizer.zero_grad()
loss.backward()
optimizer.step()
print("classifier weight grad norm:", classifier.weight.grad.norm().item())
