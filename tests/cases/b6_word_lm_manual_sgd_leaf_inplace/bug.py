"""The word_language_model example's manual SGD update (pytorch/examples#779): after backward and gradient
clipping each parameter is updated with p.add_(p.grad, alpha=-lr) outside torch.no_grad(), an in-place operation
on a leaf that requires grad, so the first update raises "a leaf Variable that requires grad is being used in an
in-place operation" (the PR updates p.data instead)."""
import torch
import torch.nn.functional as F
from torch import nn


class RNNModel(nn.Module):
    def __init__(self, ntoken=20, ninp=8, nhid=16):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid)
        self.decoder = nn.Linear(nhid, ntoken)

    def forward(self, input, hidden):
        output, hidden = self.rnn(self.encoder(input), hidden)
        return self.decoder(output), hidden

    def init_hidden(self, bsz, nhid=16):
        return torch.zeros(1, bsz, nhid), torch.zeros(1, bsz, nhid)


def repackage_hidden(h):
    return tuple(v.detach() for v in h)


torch.manual_seed(0)
model = RNNModel()
lr, clip = 20.0, 0.25
train_data = torch.randint(0, 20, (21, 4))
hidden = model.init_hidden(4)
for i in range(0, 20, 5):
    data, targets = train_data[i:i + 5], train_data[i + 1:i + 6]
    hidden = repackage_hidden(hidden)
    model.zero_grad()
    output, hidden = model(data, hidden)
    loss = F.cross_entropy(output.view(-1, 20), targets.reshape(-1))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    for p in model.parameters():
        p.add_(p.grad, alpha=-lr)  # <- autograd_error
    print(f"batch {i // 5}: loss {loss.item():.4f}")
