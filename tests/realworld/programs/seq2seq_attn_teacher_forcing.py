"""Seq2seq translation with an attention decoder, in the shape of the PyTorch tutorial "NLP From Scratch:
Translation with a Sequence to Sequence Network and Attention" (pytorch/tutorials,
intermediate_source/seq2seq_translation_tutorial.py,
https://pytorch.org/tutorials/intermediate/seq2seq_translation_tutorial.html), the classic
one-token-at-a-time version with EncoderRNN + AttnDecoderRNN.
Suspicious-but-correct patterns kept: `encoder_outputs` is a torch.zeros(max_length, hidden) buffer filled
row by row with in-place index writes (`encoder_outputs[ei] = encoder_output[0, 0]`), so the gradient to
the encoder flows through copy_ slices of a tensor that was created without requires_grad; the
attention layer scores max_length slots although the padded rows stay zero; `loss = 0` accumulated
with `+=` from a Python int; teacher forcing chosen at random per pair (random.random() replaced by
torch.rand): with it the next input is the target token, without it the next input is
`topi.squeeze().detach()` (the model's own argmax, detached on purpose) and the decode loop stops early
when `decoder_input.item() == EOS_token`; two optimizers (encoder, decoder) zeroed and stepped
together; the returned loss is `loss.item() / target_length`; greedy evaluation under torch.no_grad()
reading `decoder_attention.data` and `decoder_output.data.topk(1)`."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

SOS_token = 0
EOS_token = 1
MAX_LENGTH = 8
teacher_forcing_ratio = 0.5


class EncoderRNN(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size)

    def forward(self, input, hidden):
        embedded = self.embedding(input).view(1, 1, -1)
        output = embedded
        output, hidden = self.gru(output, hidden)
        return output, hidden

    def initHidden(self):
        return torch.zeros(1, 1, self.hidden_size)


class AttnDecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size, dropout_p=0.1, max_length=MAX_LENGTH):
        super().__init__()
        self.hidden_size = hidden_size
        self.output_size = output_size
        self.dropout_p = dropout_p
        self.max_length = max_length
        self.embedding = nn.Embedding(self.output_size, self.hidden_size)
        self.attn = nn.Linear(self.hidden_size * 2, self.max_length)
        self.attn_combine = nn.Linear(self.hidden_size * 2, self.hidden_size)
        self.dropout = nn.Dropout(self.dropout_p)
        self.gru = nn.GRU(self.hidden_size, self.hidden_size)
        self.out = nn.Linear(self.hidden_size, self.output_size)

    def forward(self, input, hidden, encoder_outputs):
        embedded = self.embedding(input).view(1, 1, -1)
        embedded = self.dropout(embedded)
        attn_weights = F.softmax(self.attn(torch.cat((embedded[0], hidden[0]), 1)), dim=1)
        attn_applied = torch.bmm(attn_weights.unsqueeze(0), encoder_outputs.unsqueeze(0))
        output = torch.cat((embedded[0], attn_applied[0]), 1)
        output = self.attn_combine(output).unsqueeze(0)
        output = F.relu(output)
        output, hidden = self.gru(output, hidden)
        output = F.log_softmax(self.out(output[0]), dim=1)
        return output, hidden, attn_weights


def train(input_tensor, target_tensor, encoder, decoder, encoder_optimizer, decoder_optimizer, criterion,
          max_length=MAX_LENGTH):
    encoder_hidden = encoder.initHidden()
    encoder_optimizer.zero_grad()
    decoder_optimizer.zero_grad()
    input_length = input_tensor.size(0)
    target_length = target_tensor.size(0)
    encoder_outputs = torch.zeros(max_length, encoder.hidden_size)
    loss = 0
    for ei in range(input_length):
        encoder_output, encoder_hidden = encoder(input_tensor[ei], encoder_hidden)
        encoder_outputs[ei] = encoder_output[0, 0]
    decoder_input = torch.tensor([[SOS_token]])
    decoder_hidden = encoder_hidden
    use_teacher_forcing = True if torch.rand(()).item() < teacher_forcing_ratio else False
    if use_teacher_forcing:
        # Teacher forcing: feed the target as the next input
        for di in range(target_length):
            decoder_output, decoder_hidden, decoder_attention = decoder(decoder_input, decoder_hidden,
                                                                        encoder_outputs)
            loss += criterion(decoder_output, target_tensor[di])
            decoder_input = target_tensor[di]
    else:
        # Without teacher forcing: use its own predictions as the next input
        for di in range(target_length):
            decoder_output, decoder_hidden, decoder_attention = decoder(decoder_input, decoder_hidden,
                                                                        encoder_outputs)
            topv, topi = decoder_output.topk(1)
            decoder_input = topi.squeeze().detach()  # detach from history as input
            loss += criterion(decoder_output, target_tensor[di])
            if decoder_input.item() == EOS_token:
                break
    loss.backward()
    encoder_optimizer.step()
    decoder_optimizer.step()
    return loss.item() / target_length


def evaluate(encoder, decoder, input_tensor, max_length=MAX_LENGTH):
    with torch.no_grad():
        input_length = input_tensor.size()[0]
        encoder_hidden = encoder.initHidden()
        encoder_outputs = torch.zeros(max_length, encoder.hidden_size)
        for ei in range(input_length):
            encoder_output, encoder_hidden = encoder(input_tensor[ei], encoder_hidden)
            encoder_outputs[ei] += encoder_output[0, 0]
        decoder_input = torch.tensor([[SOS_token]])
        decoder_hidden = encoder_hidden
        decoded = []
        decoder_attentions = torch.zeros(max_length, max_length)
        for di in range(max_length):
            decoder_output, decoder_hidden, decoder_attention = decoder(decoder_input, decoder_hidden,
                                                                        encoder_outputs)
            decoder_attentions[di] = decoder_attention.data
            topv, topi = decoder_output.data.topk(1)
            if topi.item() == EOS_token:
                decoded.append(EOS_token)
                break
            decoded.append(topi.item())
            decoder_input = topi.squeeze().detach()
        return decoded, decoder_attentions[:di + 1]


def tensor_from_indexes(indexes):
    return torch.tensor(indexes + [EOS_token], dtype=torch.long).view(-1, 1)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    n_in_words, n_out_words, hidden_size = 12, 10, 16
    # tiny generated "fra -> eng" pairs: the target is a word-by-word mapping of the reversed source
    pairs = []
    for _ in range(8):
        n = int(torch.randint(2, MAX_LENGTH - 2, ()).item())
        src = torch.randint(2, n_in_words, (n,)).tolist()
        tgt = [2 + (w % (n_out_words - 2)) for w in reversed(src)]
        pairs.append((tensor_from_indexes(src), tensor_from_indexes(tgt)))

    encoder = EncoderRNN(n_in_words, hidden_size)
    decoder = AttnDecoderRNN(hidden_size, n_out_words, dropout_p=0.1)
    learning_rate = 0.05
    encoder_optimizer = torch.optim.SGD(encoder.parameters(), lr=learning_rate)
    decoder_optimizer = torch.optim.SGD(decoder.parameters(), lr=learning_rate)
    criterion = nn.NLLLoss()
    for step in range(8):
        input_tensor, target_tensor = pairs[step % len(pairs)]
        loss = train(input_tensor, target_tensor, encoder, decoder, encoder_optimizer, decoder_optimizer,
                     criterion)
        print(f"step {step} loss {loss:.6f}")
    decoded, attentions = evaluate(encoder, decoder, pairs[0][0])
    print("decoded", decoded, "attention rows", attentions.shape[0])

    if os.environ.get("REALWORLD_STATE"):
        torch.save({"encoder": encoder.state_dict(), "decoder": decoder.state_dict()},
                   os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
