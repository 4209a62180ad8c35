"""boyuanzheng010/SemEval2021-Reading-Comprehension-of-Abstract-Meaning PR #5 "Fix bugs in UnOrderedLSTM.py"
(for issue #3), https://github.com/boyuanzheng010/SemEval2021-Reading-Comprehension-of-Abstract-Meaning/pull/5:
the baselines' LSTM wrapper (Baselines/Models/UnOrderedLSTM.py, used by the GA Reader over packed sequences)
initialises the nn.LSTM in reset_params() and sets the forget-gate bias to 1 with
`getattr(self.rnn, f'bias_hh_l{i}').chunk(4)[1].fill_(1)`. The bias is a leaf Parameter that requires grad and
the write is not under no_grad, so on current PyTorch building the model fails with "RuntimeError: Output 1 of
Split is a view and is being modified inplace ..." (older versions: "a view of a leaf Variable that requires
grad is being used in an in-place operation"); training never starts. The PR's fix: detach the bias, fill the
chunk of the detached tensor, and set it back on the LSTM as a new nn.Parameter (setattr). The reading
comprehension data is replaced by random token ids with random lengths; sizes are shrunk."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class LSTM(nn.Module):
    def __init__(self, input_size, hidden_size, batch_first=False, num_layers=1, bidirectional=False, dropout=0.2):
        super(LSTM, self).__init__()
        self.rnn = nn.LSTM(input_size=input_size, hidden_size=hidden_size, num_layers=num_layers,
                           bidirectional=bidirectional, batch_first=batch_first)
        self.reset_params()
        self.dropout = nn.Dropout(p=dropout)

    def reset_params(self):
        for i in range(self.rnn.num_layers):
            nn.init.orthogonal_(getattr(self.rnn, f'weight_hh_l{i}'))
            nn.init.kaiming_normal_(getattr(self.rnn, f'weight_ih_l{i}'))
            nn.init.constant_(getattr(self.rnn, f'bias_hh_l{i}'), val=0)
            nn.init.constant_(getattr(self.rnn, f'bias_ih_l{i}'), val=0)
            getattr(self.rnn, f'bias_hh_l{i}').chunk(4)[1].fill_(1)  # <- autograd_error

            if self.rnn.bidirectional:
                nn.init.orthogonal_(getattr(self.rnn, f'weight_hh_l{i}_reverse'))
                nn.init.kaiming_normal_(getattr(self.rnn, f'weight_ih_l{i}_reverse'))
                nn.init.constant_(getattr(self.rnn, f'bias_hh_l{i}_reverse'), val=0)
                nn.init.constant_(getattr(self.rnn, f'bias_ih_l{i}_reverse'), val=0)
                getattr(self.rnn, f'bias_hh_l{i}_reverse').chunk(4)[1].fill_(1)

    def forward(self, x, x_len):
        # x: [batch_size, seq_len, dim], x_len:[batch_size]
        x_len_sorted, x_idx = torch.sort(x_len, descending=True)
        x_sorted = torch.index_select(x, dim=0, index=x_idx)
        sorted_x, x_ori_idx = torch.sort(x_idx)
        x_packed = nn.utils.rnn.pack_padded_sequence(x_sorted, x_len_sorted, batch_first=True)
        x_packed, (hidden, c) = self.rnn(x_packed)
        x = nn.utils.rnn.pad_packed_sequence(x_packed, batch_first=True)[0]
        x = x.index_select(dim=0, index=x_ori_idx)
        hidden = torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1)
        hidden = hidden.index_select(dim=0, index=x_ori_idx)
        return hidden, x


class Reader(nn.Module):
    """Question encoder + option scorer, standing in for the GA Reader that uses the wrapper."""

    def __init__(self, vocab_size=50, emb_dim=16, hidden_size=16, n_options=5):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_dim, padding_idx=0)
        self.encoder = LSTM(emb_dim, hidden_size, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * hidden_size, n_options)

    def forward(self, tokens, lengths):
        hidden, _ = self.encoder(self.encoder.dropout(self.embedding(tokens)), lengths)
        return self.out(hidden)


model = Reader()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
lengths = torch.randint(3, 9, (8,))
tokens = torch.randint(1, 50, (8, 8)) * (torch.arange(8)[None, :] < lengths[:, None])
labels = torch.randint(0, 5, (8,))
bias_before = model.encoder.rnn.bias_hh_l0.detach().clone()
for step in range(5):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(tokens, lengths), labels)
    loss.backward()
    optimizer.step()
print("forget-gate bias at init:", bias_before.chunk(4)[1][:4].tolist())
print("bias_hh_l0 grad is None:", model.encoder.rnn.bias_hh_l0.grad is None)
print("bias_hh_l0 changed:", not torch.equal(bias_before, model.encoder.rnn.bias_hh_l0))
print("final loss: %.4f" % loss.item())
