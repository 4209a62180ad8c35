# Fix bug on missing backpropagation in WeightDropout
# https://github.com/fastai/fastai2/pull/427  (merged; see also fastai/fastai#2591)
# What went wrong: fastai2's AWD-LSTM WeightDropout (DropConnect on the LSTM's hidden-to-hidden matrix)
#   keeps the trainable copy as `weight_hh_l0_raw` and, every forward, writes a dropped-out version of it
#   into the wrapped LSTM. The dropped-out weight was computed from `raw_w.data`, which has no autograd
#   history, so weight_hh_l0_raw never received a gradient (`lstm_dp.weight_hh_l0_raw.grad is None`)
#   while weight_ih_l0 trained normally: the recurrent matrix was silently frozen.
# Fix (PR #427): apply dropout to the Parameter itself (clone it in eval mode) so the LSTM's weight is a
#   non-leaf tensor computed from weight_hh_l0_raw:
#       if self.training: w = F.dropout(raw_w, p=self.weight_p)
#       else: w = raw_w.clone()
#       setattr(self.module, layer, w)
# Plain-torch rewrite of fastai2/text/models/awdlstm.py (WeightDropout, RNNDropout, AWD_LSTM) + LinearDecoder.
import warnings
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def dropout_mask(x, sz, p):
    "Return a dropout mask of the same type as `x`, size `sz`, with probability `p` to cancel an element."
    return x.new_empty(*sz).bernoulli_(1 - p).div_(1 - p)


class RNNDropout(nn.Module):
    "Dropout with probability `p` that is consistent on the seq_len dimension."
    def __init__(self, p=0.5):
        super().__init__()
        self.p = p

    def forward(self, x):
        if not self.training or self.p == 0.: return x
        return x * dropout_mask(x.data, (x.size(0), 1, *x.shape[2:]), self.p)


class WeightDropout(nn.Module):
    "A module that warps another layer in which some weights will be replaced by 0 during training."

    def __init__(self, module, weight_p, layer_names='weight_hh_l0'):
        super().__init__()
        self.module, self.weight_p = module, weight_p
        self.layer_names = [layer_names] if isinstance(layer_names, str) else list(layer_names)
        for layer in self.layer_names:
            # Makes a copy of the weights of the selected layers.
            w = getattr(self.module, layer)
            delattr(self.module, layer)
            self.register_parameter(f'{layer}_raw', nn.Parameter(w.data))
            setattr(self.module, layer, F.dropout(w.data, p=self.weight_p, training=False))
            if isinstance(self.module, (nn.RNNBase, nn.modules.rnn.RNNBase)):
                self.module.flatten_parameters = self._do_nothing

    def _setweights(self):
        "Apply dropout to the raw weights."
        for layer in self.layer_names:
            raw_w = getattr(self, f'{layer}_raw')
            setattr(self.module, layer, F.dropout(raw_w.data, p=self.weight_p, training=self.training))  # <- data_attr

    def forward(self, *args):
        self._setweights()
        with warnings.catch_warnings():
            # To avoid the warning that comes because the weights aren't flattened.
            warnings.simplefilter("ignore")
            return self.module.forward(*args)

    def _do_nothing(self): pass


class AWD_LSTM(nn.Module):
    "AWD-LSTM inspired by https://arxiv.org/abs/1708.02182"
    initrange = 0.1

    def __init__(self, vocab_sz, emb_sz, n_hid, n_layers, pad_token=1, hidden_p=0.2, input_p=0.6,
                 weight_p=0.5, bidir=False):
        super().__init__()
        self.bs, self.emb_sz, self.n_hid, self.n_layers, self.n_dir = 1, emb_sz, n_hid, n_layers, 1
        self.encoder = nn.Embedding(vocab_sz, emb_sz, padding_idx=pad_token)
        self.encoder.weight.data.uniform_(-self.initrange, self.initrange)
        self.rnns = nn.ModuleList([self._one_rnn(emb_sz if l == 0 else n_hid, (n_hid if l != n_layers - 1 else emb_sz),
                                                 bidir, weight_p, l) for l in range(n_layers)])
        self.input_dp = RNNDropout(input_p)
        self.hidden_dps = nn.ModuleList([RNNDropout(hidden_p) for l in range(n_layers)])
        self.reset()

    def forward(self, inp):
        bs, sl = inp.shape
        if bs != self.bs: self._change_hidden(bs)
        output = self.input_dp(self.encoder(inp))
        new_hidden = []
        for l, (rnn, hid_dp) in enumerate(zip(self.rnns, self.hidden_dps)):
            output, new_h = rnn(output, self.hidden[l])
            new_hidden.append(new_h)
            if l != self.n_layers - 1: output = hid_dp(output)
        self.hidden = [(h.detach(), c.detach()) for h, c in new_hidden]
        return output

    def _change_hidden(self, bs):
        self.hidden = [self._one_hidden(l, bs) for l in range(self.n_layers)]
        self.bs = bs

    def _one_rnn(self, n_in, n_out, bidir, weight_p, l):
        "Return one of the inner rnn"
        rnn = nn.LSTM(n_in, n_out, 1, batch_first=True, bidirectional=bidir)
        return WeightDropout(rnn, weight_p)

    def _one_hidden(self, l, bs=None):
        "Return one hidden state"
        nh = (self.n_hid if l != self.n_layers - 1 else self.emb_sz)
        bs = bs or self.bs
        return (torch.zeros(1, bs, nh), torch.zeros(1, bs, nh))

    def reset(self):
        "Reset the hidden states"
        self.hidden = [self._one_hidden(l) for l in range(self.n_layers)]


class LinearDecoder(nn.Module):
    def __init__(self, n_out, n_hid, output_p=0.1):
        super().__init__()
        self.decoder = nn.Linear(n_hid, n_out)
        self.output_dp = RNNDropout(output_p)

    def forward(self, input):
        return self.decoder(self.output_dp(input))


vocab_sz, bs, bptt = 30, 4, 10
encoder = AWD_LSTM(vocab_sz, emb_sz=8, n_hid=12, n_layers=2)
model = nn.Sequential(encoder, LinearDecoder(vocab_sz, 8))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)

stream = torch.randint(2, vocab_sz, (bs, bptt * 3 + 1))
for i in range(3):
    x, y = stream[:, i * bptt:(i + 1) * bptt], stream[:, i * bptt + 1:(i + 1) * bptt + 1]
    out = model(x)
    loss = F.cross_entropy(out.reshape(-1, vocab_sz), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {i} loss {loss.item():.4f}")

lstm_dp = encoder.rnns[0]
print("weight_ih_l0.grad is None:", lstm_dp.module.weight_ih_l0.grad is None)
print("weight_hh_l0_raw.grad is None:", lstm_dp.weight_hh_l0_raw.grad is None)
