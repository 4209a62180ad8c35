# Shape of shihui2010/symbolic_simplifier Models/EncoderDecoder.py (issues #3, #4): an
# encoder-decoder trained with REINFORCE over beam-search outputs, plus an "l2 loss" that
# pulls the encoding of the input towards (or away from) the encodings of the beam results.
# tree_beam_search encodes the input ONCE and hands that encoding to enforce_encoding for
# every beam result; each enforce_encoding call runs backward + Adam step on the encoder,
# so the next call backpropagates through an encoding whose saved weights were updated.
import torch
import torch.nn as nn
import torch.optim as optim

torch.manual_seed(0)
VOCAB, HID, SOS, EOS = 12, 16, 0, 1


class EncoderLSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_matrix = nn.Embedding(VOCAB, HID)
        self.lstm = nn.LSTM(HID, HID)

    def forward(self, seq):  # seq: (T, 1) token ids
        out, (h, c) = self.lstm(self.embed_matrix(seq))
        return out, out, (h, c)


class DecoderLSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HID)
        self.cell = nn.LSTMCell(HID, HID)
        self.proj = nn.Linear(HID, VOCAB)

    def forward(self, hs, yt):
        h, c = self.cell(self.embed(yt), hs)
        return torch.softmax(self.proj(h), dim=-1), (h, c)


def scores(output_tokens, input_tokens):
    """Stand-in for Data.reward.scores: 1.0 when the output is an equivalent expression."""
    return 1.0 if output_tokens == sorted(input_tokens) else 0.0


class EncoderDecoder(object):
    def __init__(self, hps):
        self._hps = hps
        self.encoder, self.decoder = EncoderLSTM(), DecoderLSTM()
        self.encoder_optim = optim.Adam(self.encoder.parameters(), lr=hps["learning_rate"])
        self.decoder_optim = optim.Adam(self.decoder.parameters(), lr=hps["learning_rate"])

    def __train(self, loss):
        self.encoder_optim.zero_grad()
        self.decoder_optim.zero_grad()
        loss.backward(retain_graph=True)  # <- symptom
        self.encoder_optim.step()
        self.decoder_optim.step()

    def encode(self, input_seq):
        return self.encoder(input_seq)

    def enforce_encoding(self, *, s1=None, s2=None, encoded1=None, positive: bool):
        encoder_outputs1 = self.encode(s1)[2] if encoded1 is None else encoded1
        encoder_outputs2 = self.encode(s2)[2]
        split = self._hps["hidden_unit_split"]
        loss = nn.MSELoss()(encoder_outputs1[0][..., :split],
                            encoder_outputs2[0][..., :split]) * self._hps["l2_weight"]
        self.__train(int(positive) * loss)
        return loss.item()

    def beam_search(self, input_seq, depth, beam_size):
        _, _, hs = self.encode(input_seq)
        beams = [([], torch.zeros(()), (hs[0][0], hs[1][0]))]
        for _ in range(depth):
            cand = []
            for toks, lp, h in beams:
                yt = torch.tensor([toks[-1] if toks else SOS])
                probs, h2 = self.decoder(h, yt)
                logp = torch.log(probs[0] + 1e-16)
                top = torch.topk(logp, beam_size)
                for v, i in zip(top.values, top.indices):
                    cand.append((toks + [int(i)], lp + v, h2))
            beams = sorted(cand, key=lambda b: -b[1].item())[:beam_size]
        return [(toks, lp) for toks, lp, _ in beams]

    def tree_beam_search(self, sample_input, max_depth, beam_size, train, baseline=0.0):
        input_tokens = sample_input[:, 0].tolist()
        equivalence, unequals = [], []
        rl_loss, total_reward = 0, 0.0
        for depth in range(1, max_depth + 1):
            bs_results = self.beam_search(sample_input, depth, beam_size)
            prob_norm = torch.log(sum(torch.exp(lp) for _, lp in bs_results))
            for output, log_prob in bs_results:
                if scores(output, input_tokens) == 1.0:
                    equivalence.append(output)
                    rewd = 1.0 * (0.9 ** len(output))
                else:
                    rewd = -0.1 / (0.9 ** len(output))
                    unequals.append(output)
                total_reward += rewd
                rl_loss -= (rewd - baseline) * (log_prob - prob_norm)
            if len(equivalence):
                break
        if train:
            self.__train(rl_loss)
            if self._hps["l2_loss"]:
                _, _, hidden_states = self.encode(sample_input)
                for e in equivalence:
                    self.enforce_encoding(s2=torch.tensor(e).view(-1, 1), encoded1=hidden_states, positive=True)
                for ne in unequals:
                    self.enforce_encoding(s2=torch.tensor(ne).view(-1, 1), encoded1=hidden_states, positive=False)  # <- inplace_saved
        return total_reward, rl_loss


hps = {"learning_rate": 1e-3, "hidden_unit_split": 8, "l2_weight": 0.1, "l2_loss": True}
model = EncoderDecoder(hps)
expr = torch.tensor([[5], [3], [7], [2]])  # token ids of one input expression
w0 = model.encoder.lstm.weight_ih_l0.detach().clone()
for step in range(3):
    reward, rl_loss = model.tree_beam_search(expr, max_depth=2, beam_size=2, train=True)
    print("step", step, "reward", round(reward, 4), "rl_loss", round(rl_loss.item(), 4))
print("encoder weight changed:", not torch.equal(w0, model.encoder.lstm.weight_ih_l0))
