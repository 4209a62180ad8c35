"""The fixed twin: the combined loss is returned for backward, so the AuxK term trains the dead latents."""
import torch
from torch import nn


class CrossCoder(nn.Module):
    def __init__(self, d_model=8, n_latents=16, k=2):
        super().__init__()
        self.k = k
        self.W_enc = nn.Parameter(torch.randn(d_model, n_latents) * 0.3)
        self.b_enc = nn.Parameter(torch.zeros(n_latents))
        self.W_dec = nn.Parameter(torch.randn(n_latents, d_model) * 0.3)
        self.b_dec = nn.Parameter(torch.zeros(d_model))

    def forward_train(self, x):
        pre_acts = x @ self.W_enc + self.b_enc
        values, idx = pre_acts.topk(self.k, dim=-1)
        latents = torch.zeros_like(pre_acts).scatter(-1, idx, torch.relu(values))
        return pre_acts, latents, latents @ self.W_dec + self.b_dec


class BatchTopKTrainer:
    def __init__(self, crosscoder, lambda_aux=1 / 32, aux_k=4):
        self.crosscoder, self.lambda_aux, self.aux_k = crosscoder, lambda_aux, aux_k

    def aux_loss(self, batch, pre_acts, latents, recon):
        dead = latents.sum(0) == 0
        error = (batch - recon).detach()
        aux_pre = pre_acts.masked_fill(~dead, float("-inf"))
        values, idx = aux_pre.topk(self.aux_k, dim=-1)
        aux_latents = torch.zeros_like(pre_acts).scatter(-1, idx, torch.relu(values))
        return ((aux_latents @ self.crosscoder.W_dec - error) ** 2).sum(-1).mean()

    def _calculate_loss_and_log(self, batch, log):
        pre_acts, latents, recon = self.crosscoder.forward_train(batch)
        reconstruction_loss = ((recon - batch) ** 2).sum(-1).mean()
        aux_loss = self.aux_loss(batch, pre_acts, latents, recon)
        loss = reconstruction_loss + self.lambda_aux * aux_loss
        log_dict = {"train/reconstruction_loss": reconstruction_loss.item(), "train/aux_loss": aux_loss.item()} if log else None
        return loss, log_dict


torch.manual_seed(0)
batch = torch.randn(32, 8)
trained = {}
for lambda_aux in (0.0, 1 / 32):
    torch.manual_seed(1)
    crosscoder = CrossCoder()
    trainer = BatchTopKTrainer(crosscoder, lambda_aux=lambda_aux)
    optimizer = torch.optim.Adam(crosscoder.parameters(), lr=1e-2)
    for step in range(3):
        loss, log_dict = trainer._calculate_loss_and_log(batch, log=True)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    trained[lambda_aux] = crosscoder.W_enc.detach().clone()
    print(f"lambda_aux {lambda_aux}: {log_dict}")
print("the AuxK term changes the encoder:", not torch.equal(trained[0.0], trained[1 / 32]))
