# scDORI phase-1 training (topic model over ATAC peaks and RNA genes) with L1/L2
# penalties on the topic->peak decoder to make it sparse. The penalty reads the
# weights through .data, so loss_norm is a constant: raising the L1 weight to 10
# changes the logged loss but never the weights.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

N_CELLS, N_PEAKS, N_GENES, N_TOPICS = 64, 40, 20, 5
L1_PENALTY_TOPIC_PEAK = 10.0
L2_PENALTY_TOPIC_PEAK = 1.0


class ScDoriModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(N_PEAKS + N_GENES, 32), nn.ReLU(), nn.Linear(32, N_TOPICS))
        self.topic_peak_decoder = nn.Parameter(torch.randn(N_TOPICS, N_PEAKS))
        self.peak_gene_links = nn.Parameter(torch.rand(N_PEAKS, N_GENES) * 0.1)

    def forward(self, atac, rna):
        theta = F.softmax(self.encoder(torch.cat([atac, rna], dim=1)), dim=-1)
        topic_peak = F.softmax(self.topic_peak_decoder, dim=-1)
        preds_atac = theta @ topic_peak
        preds_rna = F.softmax(preds_atac @ self.peak_gene_links, dim=-1)
        return theta, preds_atac, preds_rna


def train_scdori_phases(model, atac, rna, n_epochs=20):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(n_epochs):
        optimizer.zero_grad()
        theta, preds_atac, preds_rna = model(atac, rna)
        loss_atac = -(atac * torch.log(preds_atac + 1e-8)).sum(dim=1).mean()
        loss_rna = -(rna * torch.log(preds_rna + 1e-8)).sum(dim=1).mean()

        peak_w = model.topic_peak_decoder.data  # <- cut_term
        l1_norm_topic_peak = torch.norm(peak_w, p=1)
        l2_norm_topic_peak = torch.norm(peak_w, p=2)
        loss_norm = L1_PENALTY_TOPIC_PEAK * l1_norm_topic_peak + L2_PENALTY_TOPIC_PEAK * l2_norm_topic_peak

        total_loss = loss_atac + loss_rna + loss_norm
        total_loss.backward()
        optimizer.step()
        if epoch % 5 == 0:
            print(f"epoch {epoch} total {total_loss.item():.2f} loss_norm {loss_norm.item():.2f} "
                  f"requires_grad {loss_norm.requires_grad}")


model = ScDoriModel()
atac = torch.poisson(torch.rand(N_CELLS, N_PEAKS) * 2)
rna = torch.poisson(torch.rand(N_CELLS, N_GENES) * 3)

before = model.topic_peak_decoder.detach().abs().sum().item()
train_scdori_phases(model, atac, rna)
after = model.topic_peak_decoder.detach().abs().sum().item()
print(f"L1 norm of topic_peak_decoder: before {before:.2f} after {after:.2f}")
