# vanzytay/pytorch_sentiment_rnn: "modulenorm = p.grad.data.norm() AttributeError: 'NoneType' object has no attribute 'data'"
# https://github.com/vanzytay/pytorch_sentiment_rnn/issues/6  (also reported as pytorch/pytorch#5650)
# What went wrong: train.py clips gradients by hand (clip_gradient) by looping over ALL
# model.parameters() and reading p.grad. Some registered parameters took no part in the loss for
# the chosen model type (--mdl RNN: the attention layer is built but only used for ATT-RNN), so after
# loss.backward() their .grad is None and the
# hand-written clipping crashes.
# Fix (given in the thread by the reporter): skip parameters whose grad is None
# (`if p.grad is not None:`) in clip_gradient and in the loop that rescales the gradients.
import math
import argparse
import torch
import torch.nn as nn
import torch.optim as optim

torch.manual_seed(0)


def clip_gradient(model, clip):
    """Computes a gradient clipping coefficient based on gradient norm."""
    totalnorm = 0
    for p in model.parameters():
        modulenorm = p.grad.data.norm()  # <- unused_parameter
        totalnorm += modulenorm ** 2
    totalnorm = math.sqrt(totalnorm)
    return min(1, clip / (totalnorm + 1e-6))


class AttentionLayer(nn.Module):
    def __init__(self, dim):
        super(AttentionLayer, self).__init__()
        self.proj = nn.Linear(dim, dim)
        self.score = nn.Linear(dim, 1, bias=False)

    def forward(self, output, attention_width=5):
        w = torch.softmax(self.score(torch.tanh(self.proj(output))), dim=0)
        return output * w


class BasicRNN(nn.Module):
    """Container module with an encoder, a recurrent module, and a decoder."""

    def __init__(self, args, vocab_size):
        super(BasicRNN, self).__init__()
        self.args = args
        self.encoder = nn.Embedding(vocab_size, args.embedding_size)
        self.rnn = getattr(nn, args.rnn_type)(args.embedding_size, args.rnn_size, args.rnn_layers, bias=False)
        self.AttentionLayer = AttentionLayer(args.rnn_size)
        self.decoder = nn.Linear(args.rnn_size, 3)

    def forward(self, input, hidden):
        emb = self.encoder(input)
        output, hidden = self.rnn(emb, hidden)
        if 'ATT' in self.args.model_type:
            output = self.AttentionLayer(output, attention_width=self.args.attention_width)
        output = torch.mean(output, 0)
        decoded = self.decoder(output)
        return decoded, hidden

    def init_hidden(self, bsz):
        return torch.zeros(self.args.rnn_layers, bsz, self.args.rnn_size)


args = argparse.Namespace(model_type='RNN', rnn_type='GRU', embedding_size=16, rnn_size=16, rnn_layers=1,
                          attention_width=5, clip_norm=1, learn_rate=0.01, batch_size=8)
vocab_size, seq_len = 50, 7
mdl = BasicRNN(args, vocab_size)
criterion = nn.CrossEntropyLoss()
optimizer = optim.Adam(mdl.parameters(), lr=args.learn_rate)

for i in range(20):
    sentence = torch.randint(0, vocab_size, (seq_len, args.batch_size))
    targets = torch.randint(0, 3, (args.batch_size,))
    hidden = mdl.init_hidden(args.batch_size)
    mdl.zero_grad()
    output, hidden = mdl(sentence, hidden)
    loss = criterion(output, targets)
    loss.backward()
    if args.clip_norm > 0:
        coeff = clip_gradient(mdl, args.clip_norm)
        for p in mdl.parameters():
            p.grad.mul_(coeff)
    optimizer.step()
    if i % 5 == 0:
        print(i, loss.item())
