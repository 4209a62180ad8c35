"""Variable-length sequence classification: pad_sequence, pack_padded_sequence into a bidirectional
GRU, pad_packed_sequence, the last hidden states of both directions concatenated."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence


class SeqClassifier(nn.Module):
    def __init__(self, vocab=20, emb=8, hidden=12, classes=3):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb, padding_idx=0)
        self.rnn = nn.GRU(emb, hidden, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, classes)

    def forward(self, tokens, lengths):
        packed = pack_padded_sequence(self.embedding(tokens), lengths, batch_first=True, enforce_sorted=False)
        output, hidden = self.rnn(packed)
        output, _ = pad_packed_sequence(output, batch_first=True)
        return self.fc(torch.cat([hidden[-2], hidden[-1]], dim=1)), output


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    lengths = torch.tensor([5, 3, 7, 2, 6, 4])
    seqs = [torch.randint(1, 20, (int(n),)) for n in lengths]
    tokens = pad_sequence(seqs, batch_first=True)
    y = torch.randint(0, 3, (6,))
    model = SeqClassifier()
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-2)
    for step in range(4):
        optimizer.zero_grad()
        logits, output = model(tokens, lengths)
        loss = F.cross_entropy(logits, y)
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.6f} padded {tuple(output.shape)}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
