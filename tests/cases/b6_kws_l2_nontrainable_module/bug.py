"""Triplet-loss keyword spotting on NeMo neural modules (roman-vygon/triplet_loss_kws#6): the L2 normalization is
a NonTrainableNM, whose call runs forward under torch.no_grad(), so the embeddings reaching the triplet loss have no
history; backward raised "element 0 of tensors does not require grad", and the suggested fix (uncomment
l2_embeds.requires_grad = True) silences it while the encoder gets no gradient and never learns."""
import torch
import torch.nn.functional as F
from torch import nn


class NonTrainableNM(nn.Module):
    def __call__(self, *args, **kwargs):
        with torch.no_grad():
            return self.forward(*args, **kwargs)


class JasperEncoder(nn.Module):
    def __init__(self, feat_in=8, filters=16):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv1d(feat_in, filters, 3, padding=1), nn.ReLU(), nn.Conv1d(filters, filters, 3, padding=1))

    def forward(self, audio_signal):
        return self.encoder(audio_signal)


class L2Regularizer(NonTrainableNM):  # <- no_grad
    def regularize(self, embeds):
        l2_embeds = F.normalize(embeds, p=2, dim=-1)
        l2_embeds.requires_grad = True
        return l2_embeds

    def forward(self, embeds):
        return self.regularize(embeds)


def triplet_loss(embeds, labels, margin=0.5):
    dist = torch.cdist(embeds, embeds)
    same = labels[:, None] == labels[None, :]
    hardest_pos = (dist * same).max(1).values
    hardest_neg = (dist + 1e3 * same).min(1).values
    return F.relu(hardest_pos - hardest_neg + margin).mean()


torch.manual_seed(0)
encoder, l2_regularizer = JasperEncoder(), L2Regularizer()
optimizer = torch.optim.Adam(encoder.parameters(), lr=1e-3)
audio_signal, labels = torch.randn(8, 8, 10), torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])
before = encoder.encoder[0].weight.detach().clone()
for step in range(3):
    embeds = encoder(audio_signal).mean(-1)
    loss = triplet_loss(l2_regularizer(embeds), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: triplet loss {loss.item():.4f}")
print("encoder grad is None:", encoder.encoder[0].weight.grad is None)
print("encoder changed:", not torch.equal(before, encoder.encoder[0].weight))
