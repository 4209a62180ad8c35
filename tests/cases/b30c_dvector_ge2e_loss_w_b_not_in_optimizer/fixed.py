"""yistLin/dvector PR #2, "GE2E params added into optimizer and gradient scaling adopted",
https://github.com/yistLin/dvector/pull/2: train.py builds the d-vector speaker encoder and the GE2E criterion,
whose similarity scale and offset w, b (Equation (5) of the GE2E paper) are nn.Parameters of GE2ELoss, but the
optimizer is `SGD(dvector.parameters(), lr=0.01)`. Every loss.backward() gives w and b a gradient, no optimizer
steps them, and they stay at their initial 10.0 / -5.0 (they are even checkpointed with criterion.state_dict()).
The PR: "I made GE2E parameters optimized", SGD(list(dvector.parameters()) + list(criterion.parameters())).
The PR's second change (GE2E-paper gradient scaling) is left out of both scripts. _indices_to_replace returns a
CPU LongTensor here (the repo: torch.cuda.LongTensor); the data loader is random log-mel segments."""
from functools import lru_cache

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim import SGD
from torch.optim.lr_scheduler import StepLR

torch.manual_seed(0)


class DVector(nn.Module):
    def __init__(self, num_layers=2, dim_input=8, dim_cell=16, dim_emb=8):
        super().__init__()
        self.lstm = nn.LSTM(dim_input, dim_cell, num_layers, batch_first=True)
        self.embedding = nn.Linear(dim_cell, dim_emb)

    def forward(self, inputs):
        lstm_outs, _ = self.lstm(inputs)
        embeds = self.embedding(lstm_outs[:, -1, :])
        return embeds.div(embeds.norm(p=2, dim=-1, keepdim=True))


class GE2ELoss(nn.Module):
    def __init__(self, init_w=10.0, init_b=-5.0):
        super().__init__()
        self.w = nn.Parameter(torch.tensor(init_w))
        self.b = nn.Parameter(torch.tensor(init_b))

    def cosine_similarity(self, dvecs):
        n_spkr, n_uttr, d_embd = dvecs.size()
        dvec_expns = dvecs.unsqueeze(-1).expand(n_spkr, n_uttr, d_embd, n_spkr).transpose(2, 3)
        ctrds = dvecs.mean(dim=1)
        ctrd_expns = ctrds.unsqueeze(0).expand(n_spkr * n_uttr, n_spkr, d_embd).reshape(-1, d_embd)
        dvec_rolls = torch.cat([dvecs[:, 1:, :], dvecs[:, :-1, :]], dim=1)
        dvec_excls = dvec_rolls.unfold(1, n_uttr - 1, 1)
        mean_excls = dvec_excls.mean(dim=-1).reshape(-1, d_embd)
        indices = _indices_to_replace(n_spkr, n_uttr)
        ctrd_excls = ctrd_expns.index_copy(0, indices, mean_excls).view_as(dvec_expns)
        return F.cosine_similarity(dvec_expns, ctrd_excls, 3, 1e-6)

    def embed_loss_softmax(self, dvecs, cos_sim_matrix):
        return torch.stack([torch.stack([-F.log_softmax(cos_sim_matrix[j, i], 0)[j]
                                         for i in range(dvecs.size(1))])
                            for j in range(dvecs.size(0))])

    def forward(self, dvecs):
        cos_sim_matrix = self.cosine_similarity(dvecs)
        cos_sim_matrix = cos_sim_matrix * self.w + self.b
        return self.embed_loss_softmax(dvecs, cos_sim_matrix).sum()


@lru_cache(maxsize=5)
def _indices_to_replace(n_spkr, n_uttr):
    indices = [(s * n_uttr + u) * n_spkr + s for s in range(n_spkr) for u in range(n_uttr)]
    return torch.LongTensor(indices)


n_speakers, n_utterances, seg_len, n_steps, decay_every = 4, 3, 10, 5, 100000
dvector = DVector()
criterion = GE2ELoss()
optimizer = SGD(list(dvector.parameters()) + list(criterion.parameters()), lr=0.01)
scheduler = StepLR(optimizer, step_size=decay_every, gamma=0.5)
w_start, b_start = criterion.w.item(), criterion.b.item()

for step in range(n_steps):
    batch = torch.randn(n_speakers * n_utterances, seg_len, 8)  # (speakers x utterances, frames, mels)
    embd = dvector(batch).view(n_speakers, n_utterances, -1)
    loss = criterion(embd)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    scheduler.step()
    print(f"step {step + 1}, loss = {loss:.4f}, w.grad = {criterion.w.grad.item():.4f}")

print("GE2E w:", w_start, "->", criterion.w.item(), " b:", b_start, "->", criterion.b.item())
