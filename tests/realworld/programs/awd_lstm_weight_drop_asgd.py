"""AWD-LSTM language model, reduced from salesforce/awd-lstm-lm
(https://github.com/salesforce/awd-lstm-lm: main.py, model.py, weight_drop.py, embed_regularize.py,
locked_dropout.py, utils.py).

Patterns kept (each looks like a cut but is right):
- ``repackage_hidden(hidden)`` before every BPTT chunk: truncated backpropagation through time; the hidden
  state is carried forward as a value only, on purpose.
- WeightDrop: ``del module._parameters['weight_hh_l0']`` and ``register_parameter('weight_hh_l0_raw',
  Parameter(w.data))``, then each forward sets ``module.weight_hh_l0 = F.dropout(raw_w, ...)`` (or
  ``raw_w.clone()`` in eval, the fix fastai's WeightDropout uses for current PyTorch): the LSTM's recurrent
  weight becomes a non-Parameter tensor computed from the raw Parameter, which is what learns.
- ``embedded_dropout``: the embedding lookup uses ``mask * embed.weight`` through ``F.embedding``; the
  gradient reaches ``embed.weight`` through the product.
- LockedDropout builds its mask with ``x.data.new(...).bernoulli_(...)``: ``.data`` only supplies dtype and
  device for a fresh mask; the output is ``mask * x``.
- decoder weight tied to the encoder weight (``self.decoder.weight = self.encoder.weight``).
- the lr of ``param_groups[0]`` is rescaled by the random sequence length for one step and restored.
- NT-ASGD: the optimizer is replaced by ``torch.optim.ASGD`` mid-training; evaluation swaps
  ``prm.data = optimizer.state[prm]['ax'].clone()`` in and restores ``prm.data = tmp[prm].clone()`` after.
"""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn import Parameter


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def embedded_dropout(embed, words, dropout=0.1, scale=None):
    if dropout:
        mask = embed.weight.data.new().resize_((embed.weight.size(0), 1)).bernoulli_(1 - dropout).expand_as(
            embed.weight) / (1 - dropout)
        masked_embed_weight = mask * embed.weight
    else:
        masked_embed_weight = embed.weight
    if scale:
        masked_embed_weight = scale.expand_as(masked_embed_weight) * masked_embed_weight
    padding_idx = embed.padding_idx if embed.padding_idx is not None else -1
    return F.embedding(words, masked_embed_weight, padding_idx, embed.max_norm, embed.norm_type,
                       embed.scale_grad_by_freq, embed.sparse)


class LockedDropout(nn.Module):
    def forward(self, x, dropout=0.5):
        if not self.training or not dropout:
            return x
        m = x.data.new(1, x.size(1), x.size(2)).bernoulli_(1 - dropout)
        mask = m / (1 - dropout)
        return mask.expand_as(x) * x


class WeightDrop(nn.Module):
    def __init__(self, module, weights, dropout=0.0):
        super().__init__()
        self.module = module
        self.weights = weights
        self.dropout = dropout
        self._setup()

    def _setup(self):
        for name_w in self.weights:
            w = getattr(self.module, name_w)
            del self.module._parameters[name_w]
            self.module.register_parameter(name_w + '_raw', Parameter(w.data))

    def _setweights(self):
        for name_w in self.weights:
            raw_w = getattr(self.module, name_w + '_raw')
            if self.training:
                w = F.dropout(raw_w, p=self.dropout, training=True)
            else:
                w = raw_w.clone()  # fastai's fix: never hand the raw Parameter itself to the LSTM
            setattr(self.module, name_w, w)

    def forward(self, *args):
        self._setweights()
        return self.module.forward(*args)


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.4, dropouth=0.3, dropouti=0.5, dropoute=0.1,
                 wdrop=0.5):
        super().__init__()
        self.lockdrop = LockedDropout()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnns = [nn.LSTM(ninp if l == 0 else nhid, nhid if l != nlayers - 1 else ninp, 1)
                     for l in range(nlayers)]
        self.rnns = [WeightDrop(rnn, ['weight_hh_l0'], dropout=wdrop) for rnn in self.rnns]
        self.rnns = nn.ModuleList(self.rnns)
        self.decoder = nn.Linear(ninp, ntoken)
        self.decoder.weight = self.encoder.weight  # tie weights
        self.encoder.weight.data.uniform_(-0.1, 0.1)
        self.decoder.bias.data.fill_(0)
        self.ninp, self.nhid, self.nlayers = ninp, nhid, nlayers
        self.dropout, self.dropouti, self.dropouth, self.dropoute = dropout, dropouti, dropouth, dropoute

    def forward(self, input, hidden):
        emb = embedded_dropout(self.encoder, input, dropout=self.dropoute if self.training else 0)
        emb = self.lockdrop(emb, self.dropouti)
        raw_output = emb
        new_hidden, raw_outputs, outputs = [], [], []
        for l, rnn in enumerate(self.rnns):
            raw_output, new_h = rnn(raw_output, hidden[l])
            new_hidden.append(new_h)
            raw_outputs.append(raw_output)
            if l != self.nlayers - 1:
                raw_output = self.lockdrop(raw_output, self.dropouth)
                outputs.append(raw_output)
        output = self.lockdrop(raw_output, self.dropout)
        outputs.append(output)
        decoded = self.decoder(output.view(output.size(0) * output.size(1), output.size(2)))
        return decoded, new_hidden, raw_outputs, outputs

    def init_hidden(self, bsz):
        weight = next(self.parameters()).data
        return [(weight.new_zeros(1, bsz, self.nhid if l != self.nlayers - 1 else self.ninp),
                 weight.new_zeros(1, bsz, self.nhid if l != self.nlayers - 1 else self.ninp))
                for l in range(self.nlayers)]


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    return data.narrow(0, 0, nbatch * bsz).view(bsz, -1).t().contiguous()


def get_batch(source, i, seq_len):
    seq_len = min(seq_len, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].view(-1)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    np.random.seed(0)
    ntokens, bptt, batch_size, lr, clip, alpha, beta, wdecay = 20, 8, 4, 10.0, 0.25, 2.0, 1.0, 1.2e-6
    # a repeating corpus so the model has something to learn
    corpus = torch.tensor([(i * 7 + (i // 5)) % ntokens for i in range(200)])
    train_data = batchify(corpus[:160], batch_size)
    val_data = batchify(corpus[160:], batch_size)
    model = RNNModel(ntokens, 16, 24, 2)
    criterion = nn.CrossEntropyLoss()
    params = list(model.parameters())
    optimizer = torch.optim.SGD(params, lr=lr, weight_decay=wdecay)

    def evaluate(data_source):
        model.eval()
        total_loss, hidden = 0., model.init_hidden(batch_size)
        with torch.no_grad():
            for i in range(0, data_source.size(0) - 1, bptt):
                data, targets = get_batch(data_source, i, bptt)
                output, hidden, _, _ = model(data, hidden)
                total_loss += len(data) * criterion(output, targets).item()
                hidden = repackage_hidden(hidden)
        return total_loss / len(data_source)

    def train():
        model.train()
        hidden = model.init_hidden(batch_size)
        batch, i = 0, 0
        while i < train_data.size(0) - 1 - 1:
            bptt_len = bptt if np.random.random() < 0.95 else bptt / 2.
            seq_len = max(5, int(np.random.normal(bptt_len, 2)))
            lr2 = optimizer.param_groups[0]['lr']
            optimizer.param_groups[0]['lr'] = lr2 * seq_len / bptt
            data, targets = get_batch(train_data, i, seq_len)
            hidden = repackage_hidden(hidden)
            optimizer.zero_grad()
            output, hidden, rnn_hs, dropped_rnn_hs = model(data, hidden)
            raw_loss = criterion(output, targets)
            loss = raw_loss
            loss = loss + alpha * dropped_rnn_hs[-1].pow(2).mean()  # activation regularisation
            loss = loss + beta * (rnn_hs[-1][1:] - rnn_hs[-1][:-1]).pow(2).mean()  # temporal AR
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, clip)
            optimizer.step()
            optimizer.param_groups[0]['lr'] = lr2
            print(f"  batch {batch} seq_len {seq_len} loss {raw_loss.item():.6f}")
            batch += 1
            i += seq_len

    best_val_loss = []
    switch_epoch = 1  # stands in for the non-monotone trigger, which needs many epochs
    for epoch in range(3):
        train()
        if 't0' in optimizer.param_groups[0]:
            tmp = {}
            for prm in model.parameters():
                tmp[prm] = prm.data.clone()
                prm.data = optimizer.state[prm]['ax'].clone()
            val_loss2 = evaluate(val_data)
            print(f"epoch {epoch} valid (averaged) loss {val_loss2:.6f}")
            for prm in model.parameters():
                prm.data = tmp[prm].clone()
        else:
            val_loss = evaluate(val_data)
            print(f"epoch {epoch} valid loss {val_loss:.6f}")
            if epoch >= switch_epoch:
                print("Switching to ASGD")
                optimizer = torch.optim.ASGD(model.parameters(), lr=lr, t0=0, lambd=0., weight_decay=wdecay)
            best_val_loss.append(val_loss)
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
