"""DARTS (rnn search): backward fails on the second batch unless retain_graph=True.

Source: https://github.com/quark0/darts/issues/56
What the user saw: after porting the RNN search code to PyTorch 0.4, training only ran with
loss.backward(retain_graph=True); plain loss.backward() raised "Trying to backward through the graph a
second time".
Why: the hidden state is carried from one batch to the next (truncated BPTT). repackage_hidden() is meant
to cut it from the previous batch's graph, but the ported version returns the tensors unchanged, so the
second batch's loss still reaches back into the first batch's (already freed) graph. retain_graph=True
only hides this and backpropagates through every earlier batch.
Fix (from the thread): repackage_hidden returns h.detach() for tensors.
"""
import torch
import torch.nn as nn

torch.manual_seed(0)


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h  # <- autograd_error
    else:
        return tuple(repackage_hidden(v) for v in h)


class RNNModel(nn.Module):
    def __init__(self, ntoken=10, nhid=8):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, nhid)
        self.rnn = nn.LSTM(nhid, nhid)
        self.decoder = nn.Linear(nhid, ntoken)

    def forward(self, inp, hidden):
        output, hidden = self.rnn(self.encoder(inp), hidden)
        return torch.log_softmax(self.decoder(output), dim=-1), hidden

    def init_hidden(self, bsz):
        return (torch.zeros(1, bsz, 8), torch.zeros(1, bsz, 8))


model = RNNModel()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
train_data = torch.randint(0, 10, (41, 2))
hidden = model.init_hidden(2)
for i in range(0, 40, 10):
    data, targets = train_data[i:i + 10], train_data[i + 1:i + 11]
    hidden = repackage_hidden(hidden)
    optimizer.zero_grad()
    log_prob, hidden = model(data, hidden)
    loss = nn.functional.nll_loss(log_prob.view(-1, 10), targets.reshape(-1))
    loss.backward()
    optimizer.step()
    print(f"batch {i // 10} loss {loss.item():.4f}")
