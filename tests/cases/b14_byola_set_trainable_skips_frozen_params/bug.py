"""BYOL-A audio representation (nttcslab/byol-a#7): NetworkCommonMixIn.set_trainable only touches parameters that
already require grad (`if p.requires_grad:`), so after set_trainable(False) for the linear-probe warm-up, the
set_trainable(True) meant to fine-tune the encoder does nothing: the encoder stays frozen and never changes while
the classifier trains. The issue's fix removes the `if p.requires_grad` filter."""
import torch
import torch.nn.functional as F
from torch import nn


class NetworkCommonMixIn():
    def set_trainable(self, trainable=False):
        for p in self.parameters():
            if p.requires_grad:  # <- no_update
                p.requires_grad = trainable


class AudioNTT2020Task6(nn.Module, NetworkCommonMixIn):
    def __init__(self, n_mels, d):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, stride=1, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2, stride=2),
            nn.Conv2d(8, 8, 3, stride=1, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2, stride=2),
        )
        self.fc = nn.Sequential(nn.Linear(8 * (n_mels // (2**2)), d), nn.ReLU(), nn.Linear(d, d), nn.ReLU())
        self.d = d

    def forward(self, x):
        x = self.features(x)       # (batch, ch, mel, time)
        x = x.permute(0, 3, 2, 1)  # (batch, time, mel, ch)
        B, T, D, C = x.shape
        x = x.reshape((B, T, C * D))
        x = self.fc(x)
        (x1, _) = torch.max(x, dim=1)
        return x1 + torch.mean(x, dim=1)


torch.manual_seed(0)
encoder = AudioNTT2020Task6(n_mels=16, d=32)
head = nn.Linear(32, 5)
optimizer = torch.optim.Adam(list(encoder.parameters()) + list(head.parameters()), lr=1e-2)
lms, labels = torch.randn(8, 1, 16, 12), torch.randint(0, 5, (8,))
encoder.set_trainable(False)  # linear-probe warm-up
for epoch in range(4):
    if epoch == 2:
        encoder.set_trainable(True)  # then fine-tune the whole network
        encoder_before = encoder.fc[0].weight.detach().clone()
    loss = F.cross_entropy(head(encoder(lms)), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
print(f"encoder requires grad after set_trainable(True): {encoder.fc[0].weight.requires_grad}; "
      f"changed while fine-tuning: {not torch.equal(encoder_before, encoder.fc[0].weight)}")
