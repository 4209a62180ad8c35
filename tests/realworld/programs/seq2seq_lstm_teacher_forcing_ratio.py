"""Seq2seq LSTM encoder-decoder (Sutskever et al.) with a per-token teacher forcing ratio: the decoder is fed
either the ground-truth token or its own argmax prediction; validation decodes greedily inside the
training loop with teacher forcing off; the best checkpoint is kept and reloaded at the end.

Source: https://github.com/bentrevett/pytorch-seq2seq (1 - Sequence to Sequence Learning with Neural
Networks.ipynb), one of the most followed PyTorch seq2seq tutorials.

Patterns kept (all right):
- `outputs = torch.zeros(trg_len, batch_size, trg_vocab_size)` then `outputs[t] = output`: writing graph
  outputs into a preallocated zeros tensor is recorded by autograd (CopySlices); the gradient reaches every
  step's output. Row 0 stays zero and is sliced off before the loss (`output[1:]`).
- `top1 = output.argmax(1)` fed back as the next input when not teacher forcing: an integer token index has
  no gradient by nature (scheduled-sampling style feedback), the decoder still learns through `output`.
- `init_weights` uses `nn.init.uniform_(param.data, -0.08, 0.08)` before the optimizer exists.
- `evaluate` runs `model.eval()` + `torch.no_grad()` with `teacher_forcing_ratio=0`, i.e. greedy decoding,
  between training epochs; the next `train` call switches back with `model.train()`.
- `epoch_loss += loss.item()` only logs.
- The best validation state is kept (`copy.deepcopy(model.state_dict())`, standing in for `torch.save` to
  `tut1-model.pt`) and restored with `model.load_state_dict` after training, as the tutorial does before
  testing.
"""
import copy
import os
import random

import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, input_dim, emb_dim, hid_dim, n_layers, dropout):
        super().__init__()
        self.embedding = nn.Embedding(input_dim, emb_dim)
        self.rnn = nn.LSTM(emb_dim, hid_dim, n_layers, dropout=dropout)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src):
        embedded = self.dropout(self.embedding(src))
        outputs, (hidden, cell) = self.rnn(embedded)
        return hidden, cell


class Decoder(nn.Module):
    def __init__(self, output_dim, emb_dim, hid_dim, n_layers, dropout):
        super().__init__()
        self.output_dim = output_dim
        self.embedding = nn.Embedding(output_dim, emb_dim)
        self.rnn = nn.LSTM(emb_dim, hid_dim, n_layers, dropout=dropout)
        self.fc_out = nn.Linear(hid_dim, output_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, input, hidden, cell):
        input = input.unsqueeze(0)
        embedded = self.dropout(self.embedding(input))
        output, (hidden, cell) = self.rnn(embedded, (hidden, cell))
        prediction = self.fc_out(output.squeeze(0))
        return prediction, hidden, cell


class Seq2Seq(nn.Module):
    def __init__(self, encoder, decoder):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder

    def forward(self, src, trg, teacher_forcing_ratio=0.5):
        batch_size = trg.shape[1]
        trg_len = trg.shape[0]
        trg_vocab_size = self.decoder.output_dim
        outputs = torch.zeros(trg_len, batch_size, trg_vocab_size)
        hidden, cell = self.encoder(src)
        input = trg[0, :]
        for t in range(1, trg_len):
            output, hidden, cell = self.decoder(input, hidden, cell)
            outputs[t] = output
            teacher_force = random.random() < teacher_forcing_ratio
            top1 = output.argmax(1)
            input = trg[t] if teacher_force else top1
        return outputs


def init_weights(m):
    for name, param in m.named_parameters():
        nn.init.uniform_(param.data, -0.08, 0.08)


def make_batch(batch_size, length, vocab, pad_idx=0, sos=1, eos=2):
    """Toy task: the target is the reversed source, wrapped in <sos> ... <eos>, padded with <pad>."""
    src = torch.randint(3, vocab, (length, batch_size))
    trg = torch.cat([torch.full((1, batch_size), sos), src.flip(0), torch.full((1, batch_size), eos)])
    trg[-1, : batch_size // 2] = pad_idx
    return src, trg


def train(model, iterator, optimizer, criterion, clip):
    model.train()
    epoch_loss = 0
    for src, trg in iterator:
        optimizer.zero_grad()
        output = model(src, trg)
        output_dim = output.shape[-1]
        output = output[1:].view(-1, output_dim)
        trg = trg[1:].view(-1)
        loss = criterion(output, trg)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        epoch_loss += loss.item()
    return epoch_loss / len(iterator)


def evaluate(model, iterator, criterion):
    model.eval()
    epoch_loss = 0
    with torch.no_grad():
        for src, trg in iterator:
            output = model(src, trg, 0)
            output_dim = output.shape[-1]
            loss = criterion(output[1:].view(-1, output_dim), trg[1:].view(-1))
            epoch_loss += loss.item()
    return epoch_loss / len(iterator)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    random.seed(0)
    INPUT_DIM = OUTPUT_DIM = 12
    TRG_PAD_IDX = 0
    enc = Encoder(INPUT_DIM, 16, 32, 2, 0.1)
    dec = Decoder(OUTPUT_DIM, 16, 32, 2, 0.1)
    model = Seq2Seq(enc, dec)
    model.apply(init_weights)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    criterion = nn.CrossEntropyLoss(ignore_index=TRG_PAD_IDX)
    train_iterator = [make_batch(8, 5, INPUT_DIM) for _ in range(3)]
    valid_iterator = [make_batch(8, 5, INPUT_DIM) for _ in range(1)]
    best_valid_loss, best_state = float("inf"), None
    for epoch in range(4):
        train_loss = train(model, train_iterator, optimizer, criterion, clip=1)
        valid_loss = evaluate(model, valid_iterator, criterion)
        if valid_loss < best_valid_loss:
            best_valid_loss = valid_loss
            best_state = copy.deepcopy(model.state_dict())
        print(f"epoch {epoch} train loss {train_loss:.4f} val loss {valid_loss:.4f}")
    model.load_state_dict(best_state)
    print(f"best val loss {evaluate(model, valid_iterator, criterion):.4f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
