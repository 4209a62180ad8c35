"""AWD-LSTM language model (salesforce/awd-lstm-lm#77, https://github.com/salesforce/awd-lstm-lm/issues/77):
"Update parameter with ASGD ... is this intentional to only updating the model.parameters() without
loss.parameters()?". main.py trains with params = list(model.parameters()) + list(criterion.parameters()) (the
SplitCrossEntropyLoss tombstone vectors/biases used for WikiText-103 / One Billion Word splits), but when the
non-monotone trigger switches to ASGD, the new optimizer is given model.parameters() only: from then on the
criterion's tail_vectors / tail_bias still get gradients every step but are never updated.
Fix: build the ASGD optimizer over params (model + criterion), as the SGD/Adam optimizers are."""
from types import SimpleNamespace

import torch
import torch.nn as nn


class SplitCrossEntropyLoss(nn.Module):
    r'''splitcross.py in short: an approximate (two-level) softmax with one learned tombstone per tail split'''

    def __init__(self, hidden_size, splits, verbose=False):
        super(SplitCrossEntropyLoss, self).__init__()
        self.hidden_size = hidden_size
        self.splits = [0] + splits + [100 * 1000000]
        self.nsplits = len(self.splits) - 1
        if self.nsplits > 1:
            self.tail_vectors = nn.Parameter(torch.zeros(self.nsplits - 1, hidden_size))
            self.tail_bias = nn.Parameter(torch.zeros(self.nsplits - 1))

    def forward(self, weight, bias, hiddens, targets):
        hiddens = hiddens.view(-1, hiddens.size(-1))
        start, end = self.splits[0], self.splits[1]
        head_weight = torch.cat([weight[start:end], self.tail_vectors])
        head_bias = torch.cat([bias[start:end], self.tail_bias])
        head = torch.nn.functional.log_softmax(torch.nn.functional.linear(hiddens, head_weight, head_bias), dim=-1)
        results = [head[:, :-(self.nsplits - 1)]]
        for idx in range(1, self.nsplits):
            start, end = self.splits[idx], self.splits[idx + 1]
            tail_res = torch.nn.functional.linear(hiddens, weight[start:end], bias=bias[start:end])
            # p(tombstone) * p(word within tombstone), in log space
            results.append(head[:, -idx].view(-1, 1) + torch.nn.functional.log_softmax(tail_res, dim=-1))
        logprobs = torch.cat(results, dim=1)
        return -logprobs.gather(1, targets.view(-1, 1)).mean()


class RNNModel(nn.Module):
    """model.py in short: embedding -> LSTM -> decoder (tied), the loss applied by the criterion."""

    def __init__(self, ntoken, ninp):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, ninp)
        self.decoder = nn.Linear(ninp, ntoken)
        self.decoder.weight = self.encoder.weight

    def forward(self, data):
        output, _ = self.rnn(self.encoder(data))
        return output


torch.manual_seed(1111)
args = SimpleNamespace(lr=1.0, wdecay=1.2e-6, clip=0.25, optimizer='sgd', epochs=4)
ntokens, splits = 30, [10, 20]
model = RNNModel(ntokens, 16)
criterion = SplitCrossEntropyLoss(16, splits=splits, verbose=False)
params = list(model.parameters()) + list(criterion.parameters())
train_data = torch.randint(0, ntokens, (11, 4))


def train():
    for i in range(0, train_data.size(0) - 1, 5):
        data, targets = train_data[i:i + 5], train_data[i + 1:i + 6].reshape(-1)
        optimizer.zero_grad()
        output = model(data)
        raw_loss = criterion(model.decoder.weight, model.decoder.bias, output, targets)
        raw_loss.backward()
        torch.nn.utils.clip_grad_norm_(params, args.clip)
        optimizer.step()
    return raw_loss.item()


optimizer = None
# Ensure the optimizer is optimizing params, which includes both the model's weights as well as the criterion's weight (i.e. Adaptive Softmax)
if args.optimizer == 'sgd':
    optimizer = torch.optim.SGD(params, lr=args.lr, weight_decay=args.wdecay)
for epoch in range(1, args.epochs + 1):
    print(f"epoch {epoch} loss {train():.4f} ({type(optimizer).__name__})")
    # the non-monotone trigger (val_loss > min(best_val_loss[:-nonmono])) fires after epoch 2 here
    if args.optimizer == 'sgd' and 't0' not in optimizer.param_groups[0] and epoch == 2:
        print('Switching to ASGD')
        optimizer = torch.optim.ASGD(params, lr=args.lr, t0=0, lambd=0., weight_decay=args.wdecay)
        tail_at_switch = criterion.tail_vectors.detach().clone()
        rnn_at_switch = model.rnn.weight_hh_l0.detach().clone()
print("criterion.tail_vectors grad is None:", criterion.tail_vectors.grad is None)
print("tail_vectors changed after the switch to ASGD:", not torch.equal(tail_at_switch, criterion.tail_vectors))
print("LSTM weights changed after the switch to ASGD:", not torch.equal(rnn_at_switch, model.rnn.weight_hh_l0))
