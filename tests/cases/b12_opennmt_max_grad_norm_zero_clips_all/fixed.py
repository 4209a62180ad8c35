"""The fixed twin: as OpenNMT does, clip only when max_grad_norm > 0 (OpenNMT/OpenNMT-py#1140)."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
VOCAB, EMB, HID = 20, 16, 32


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.src_emb, self.tgt_emb = nn.Embedding(VOCAB, EMB), nn.Embedding(VOCAB, EMB)
        self.encoder, self.decoder = nn.GRU(EMB, HID, batch_first=True), nn.GRU(EMB, HID, batch_first=True)
        self.generator = nn.Linear(HID, VOCAB)

    def forward(self, src, tgt_in):
        _, h = self.encoder(self.src_emb(src))
        out, _ = self.decoder(self.tgt_emb(tgt_in), h)
        return self.generator(out)


model = Seq2Seq()
max_grad_norm = 0.0  # from the command line: -max_grad_norm 0
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.998))
src, tgt = torch.randint(0, VOCAB, (8, 7)), torch.randint(0, VOCAB, (8, 6))
before = model.generator.weight.detach().clone()
for step in range(3):
    logits = model(src, tgt[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), tgt[:, 1:].reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    if max_grad_norm > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    optimizer.step()
print(f"generator grad set: {model.generator.weight.grad is not None}; "
      f"changed: {not torch.equal(model.generator.weight, before)}")
