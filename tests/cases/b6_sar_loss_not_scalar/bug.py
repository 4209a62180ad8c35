"""Training docTR's SAR text recognizer in PyTorch (mindee/doctr#379): compute_loss returns the per-word cross
entropy with ce_loss.unsqueeze(1), a (batch, 1) tensor instead of a scalar, so loss.backward() raises "grad can be
implicitly created only for scalar outputs"."""
import torch
import torch.nn.functional as F
from torch import nn


class SAR(nn.Module):
    def __init__(self, vocab_size=10, max_length=6, hidden=16):
        super().__init__()
        self.feat_extractor = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d((1, max_length)))
        self.decoder = nn.GRU(8, hidden, batch_first=True)
        self.linear = nn.Linear(hidden, vocab_size + 1)

    def forward(self, x):
        features = self.feat_extractor(x).squeeze(2).transpose(1, 2)
        return self.linear(self.decoder(features)[0])

    @staticmethod
    def compute_loss(model_output, gt, seq_len):
        input_len = model_output.shape[1]
        seq_len = seq_len + 1
        cce = F.cross_entropy(model_output.permute(0, 2, 1), gt, reduction="none")
        mask_2d = torch.arange(input_len)[None, :] >= seq_len[:, None]
        cce[mask_2d] = 0
        ce_loss = cce.sum(1) / seq_len.to(dtype=model_output.dtype)
        return ce_loss.unsqueeze(1)  # <- autograd_error


torch.manual_seed(0)
model = SAR()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
images = torch.randn(4, 1, 8, 24)
gt, seq_len = torch.randint(0, 11, (4, 6)), torch.tensor([3, 5, 2, 4])
for step in range(3):
    loss = model.compute_loss(model(images), gt, seq_len)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.mean().item():.4f}")
