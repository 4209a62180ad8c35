"""Tacotron 2: character encoder (convs + packed BiLSTM), autoregressive decoder trained with teacher forcing
on ground-truth mel frames, always-on prenet dropout, location-sensitive attention, stop-token (gate)
prediction, residual postnet, masked outputs and Tacotron2Loss.

Source: https://github.com/NVIDIA/tacotron2 (model.py, layers.py, loss_function.py, train.py, data_utils.py
TextMelCollate).

Patterns kept (all right):
- Teacher forcing: the decoder inputs are the target mels shifted by a zero "go" frame created with
  `memory.data.new(B, n_mel).zero_()`: reading `.data` only to allocate a fresh constant tensor.
- Decoder states are initialised the same way (`memory.data.new(...).zero_()`), constants by design.
- `Prenet` applies `F.dropout(..., p=0.5, training=True)` even in eval: intentional (paper), not a bug.
- Attention masking `alignment.data.masked_fill_(mask, -inf)` before softmax: the padded energies are
  overwritten outside autograd, but the only consumer is softmax, whose backward uses its own output
  (0 at masked positions), so the gradient is exactly that of a masked attention.
- `self.attention_weights_cum += self.attention_weights`: in-place accumulation of a graph tensor that
  no backward formula saved (it is only read by `torch.cat`), so gradient flows through the cumulative
  weights into the location layer.
- `parse_output` writes `gate_outputs.data.masked_fill_(mask, 1e3)` and masks the postnet output the same
  way: nothing saved for backward reads those tensors before the write, the loss sees the masked values,
  and the padded positions contribute zero gradient (targets are 0 / 1 there). The pre-postnet mel output
  is masked out-of-place because the postnet's first conv saved it for backward.
- `Tacotron2Loss` sets `mel_target.requires_grad = False` / `gate_target.requires_grad = False`: targets.
- Lengths handled via `text_lengths.data` and `input_lengths.cpu().numpy()` for `pack_padded_sequence`.
- `reduced_loss = loss.item()`, `grad_norm = clip_grad_norm_(...)`, `math.isnan(grad_norm)` logging.
"""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


def get_mask_from_lengths(lengths):
    max_len = torch.max(lengths).item()
    ids = torch.arange(0, max_len, dtype=torch.long)
    return ids < lengths.unsqueeze(1)


class LinearNorm(nn.Module):
    def __init__(self, in_dim, out_dim, bias=True, w_init_gain="linear"):
        super().__init__()
        self.linear_layer = nn.Linear(in_dim, out_dim, bias=bias)
        nn.init.xavier_uniform_(self.linear_layer.weight, gain=nn.init.calculate_gain(w_init_gain))

    def forward(self, x):
        return self.linear_layer(x)


class ConvNorm(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size=1, bias=True, w_init_gain="linear"):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, padding=(kernel_size - 1) // 2, bias=bias)
        nn.init.xavier_uniform_(self.conv.weight, gain=nn.init.calculate_gain(w_init_gain))

    def forward(self, signal):
        return self.conv(signal)


class LocationLayer(nn.Module):
    def __init__(self, n_filters, kernel_size, attention_dim):
        super().__init__()
        self.location_conv = ConvNorm(2, n_filters, kernel_size, bias=False)
        self.location_dense = LinearNorm(n_filters, attention_dim, bias=False, w_init_gain="tanh")

    def forward(self, attention_weights_cat):
        return self.location_dense(self.location_conv(attention_weights_cat).transpose(1, 2))


class Attention(nn.Module):
    def __init__(self, attention_rnn_dim, embedding_dim, attention_dim, n_filters=4, kernel_size=3):
        super().__init__()
        self.query_layer = LinearNorm(attention_rnn_dim, attention_dim, bias=False, w_init_gain="tanh")
        self.memory_layer = LinearNorm(embedding_dim, attention_dim, bias=False, w_init_gain="tanh")
        self.v = LinearNorm(attention_dim, 1, bias=False)
        self.location_layer = LocationLayer(n_filters, kernel_size, attention_dim)
        self.score_mask_value = -float("inf")

    def get_alignment_energies(self, query, processed_memory, attention_weights_cat):
        processed_query = self.query_layer(query.unsqueeze(1))
        processed_attention_weights = self.location_layer(attention_weights_cat)
        energies = self.v(torch.tanh(processed_query + processed_attention_weights + processed_memory))
        return energies.squeeze(-1)

    def forward(self, attention_hidden_state, memory, processed_memory, attention_weights_cat, mask):
        alignment = self.get_alignment_energies(attention_hidden_state, processed_memory, attention_weights_cat)
        if mask is not None:
            alignment.data.masked_fill_(mask, self.score_mask_value)
        attention_weights = F.softmax(alignment, dim=1)
        attention_context = torch.bmm(attention_weights.unsqueeze(1), memory).squeeze(1)
        return attention_context, attention_weights


class Prenet(nn.Module):
    def __init__(self, in_dim, sizes):
        super().__init__()
        in_sizes = [in_dim] + sizes[:-1]
        self.layers = nn.ModuleList([LinearNorm(i, o, bias=False) for i, o in zip(in_sizes, sizes)])

    def forward(self, x):
        for linear in self.layers:
            x = F.dropout(F.relu(linear(x)), p=0.5, training=True)
        return x


class Postnet(nn.Module):
    def __init__(self, n_mel, emb_dim=16, kernel_size=5, n_convs=3):
        super().__init__()
        chans = [n_mel] + [emb_dim] * (n_convs - 1) + [n_mel]
        self.convolutions = nn.ModuleList()
        for i in range(n_convs):
            gain = "tanh" if i < n_convs - 1 else "linear"
            self.convolutions.append(nn.Sequential(ConvNorm(chans[i], chans[i + 1], kernel_size, w_init_gain=gain),
                                                   nn.BatchNorm1d(chans[i + 1])))

    def forward(self, x):
        for i in range(len(self.convolutions) - 1):
            x = F.dropout(torch.tanh(self.convolutions[i](x)), 0.5, self.training)
        return F.dropout(self.convolutions[-1](x), 0.5, self.training)


class Encoder(nn.Module):
    def __init__(self, emb_dim=16, kernel_size=5, n_convs=2):
        super().__init__()
        self.convolutions = nn.ModuleList([nn.Sequential(ConvNorm(emb_dim, emb_dim, kernel_size, w_init_gain="relu"),
                                                         nn.BatchNorm1d(emb_dim)) for _ in range(n_convs)])
        self.lstm = nn.LSTM(emb_dim, emb_dim // 2, 1, batch_first=True, bidirectional=True)

    def forward(self, x, input_lengths):
        for conv in self.convolutions:
            x = F.dropout(F.relu(conv(x)), 0.5, self.training)
        x = x.transpose(1, 2)
        input_lengths = input_lengths.cpu().numpy()
        x = nn.utils.rnn.pack_padded_sequence(x, input_lengths, batch_first=True)
        self.lstm.flatten_parameters()
        outputs, _ = self.lstm(x)
        outputs, _ = nn.utils.rnn.pad_packed_sequence(outputs, batch_first=True)
        return outputs


class Decoder(nn.Module):
    def __init__(self, n_mel, enc_dim=16, attention_rnn_dim=32, decoder_rnn_dim=32, prenet_dim=16, attention_dim=16):
        super().__init__()
        self.n_mel_channels, self.encoder_embedding_dim = n_mel, enc_dim
        self.attention_rnn_dim, self.decoder_rnn_dim = attention_rnn_dim, decoder_rnn_dim
        self.p_attention_dropout = self.p_decoder_dropout = 0.1
        self.prenet = Prenet(n_mel, [prenet_dim, prenet_dim])
        self.attention_rnn = nn.LSTMCell(prenet_dim + enc_dim, attention_rnn_dim)
        self.attention_layer = Attention(attention_rnn_dim, enc_dim, attention_dim)
        self.decoder_rnn = nn.LSTMCell(attention_rnn_dim + enc_dim, decoder_rnn_dim, 1)
        self.linear_projection = LinearNorm(decoder_rnn_dim + enc_dim, n_mel)
        self.gate_layer = LinearNorm(decoder_rnn_dim + enc_dim, 1, bias=True, w_init_gain="sigmoid")

    def get_go_frame(self, memory):
        B = memory.size(0)
        return memory.data.new(B, self.n_mel_channels).zero_()

    def initialize_decoder_states(self, memory, mask):
        B, MAX_TIME = memory.size(0), memory.size(1)
        self.attention_hidden = memory.data.new(B, self.attention_rnn_dim).zero_()
        self.attention_cell = memory.data.new(B, self.attention_rnn_dim).zero_()
        self.decoder_hidden = memory.data.new(B, self.decoder_rnn_dim).zero_()
        self.decoder_cell = memory.data.new(B, self.decoder_rnn_dim).zero_()
        self.attention_weights = memory.data.new(B, MAX_TIME).zero_()
        self.attention_weights_cum = memory.data.new(B, MAX_TIME).zero_()
        self.attention_context = memory.data.new(B, self.encoder_embedding_dim).zero_()
        self.memory = memory
        self.processed_memory = self.attention_layer.memory_layer(memory)
        self.mask = mask

    def parse_decoder_inputs(self, decoder_inputs):
        return decoder_inputs.transpose(1, 2).transpose(0, 1)  # (B, n_mel, T) -> (T, B, n_mel)

    def parse_decoder_outputs(self, mel_outputs, gate_outputs, alignments):
        alignments = torch.stack(alignments).transpose(0, 1)
        gate_outputs = torch.stack(gate_outputs).transpose(0, 1).contiguous()
        mel_outputs = torch.stack(mel_outputs).transpose(0, 1).contiguous()
        return mel_outputs.transpose(1, 2), gate_outputs, alignments

    def decode(self, decoder_input):
        cell_input = torch.cat((decoder_input, self.attention_context), -1)
        self.attention_hidden, self.attention_cell = self.attention_rnn(cell_input, (self.attention_hidden, self.attention_cell))
        self.attention_hidden = F.dropout(self.attention_hidden, self.p_attention_dropout, self.training)
        attention_weights_cat = torch.cat((self.attention_weights.unsqueeze(1), self.attention_weights_cum.unsqueeze(1)), dim=1)
        self.attention_context, self.attention_weights = self.attention_layer(
            self.attention_hidden, self.memory, self.processed_memory, attention_weights_cat, self.mask)
        self.attention_weights_cum += self.attention_weights
        decoder_input = torch.cat((self.attention_hidden, self.attention_context), -1)
        self.decoder_hidden, self.decoder_cell = self.decoder_rnn(decoder_input, (self.decoder_hidden, self.decoder_cell))
        self.decoder_hidden = F.dropout(self.decoder_hidden, self.p_decoder_dropout, self.training)
        decoder_hidden_attention_context = torch.cat((self.decoder_hidden, self.attention_context), dim=1)
        decoder_output = self.linear_projection(decoder_hidden_attention_context)
        gate_prediction = self.gate_layer(decoder_hidden_attention_context)
        return decoder_output, gate_prediction, self.attention_weights

    def forward(self, memory, decoder_inputs, memory_lengths):
        decoder_input = self.get_go_frame(memory).unsqueeze(0)
        decoder_inputs = self.parse_decoder_inputs(decoder_inputs)
        decoder_inputs = torch.cat((decoder_input, decoder_inputs), dim=0)
        decoder_inputs = self.prenet(decoder_inputs)
        self.initialize_decoder_states(memory, mask=~get_mask_from_lengths(memory_lengths))
        mel_outputs, gate_outputs, alignments = [], [], []
        while len(mel_outputs) < decoder_inputs.size(0) - 1:
            decoder_input = decoder_inputs[len(mel_outputs)]
            mel_output, gate_output, attention_weights = self.decode(decoder_input)
            mel_outputs += [mel_output.squeeze(1)]
            gate_outputs += [gate_output.squeeze(1)]
            alignments += [attention_weights]
        return self.parse_decoder_outputs(mel_outputs, gate_outputs, alignments)


class Tacotron2(nn.Module):
    def __init__(self, n_symbols=10, symbols_embedding_dim=16, n_mel_channels=6):
        super().__init__()
        self.n_mel_channels = n_mel_channels
        self.embedding = nn.Embedding(n_symbols, symbols_embedding_dim)
        std = math.sqrt(2.0 / (n_symbols + symbols_embedding_dim))
        val = math.sqrt(3.0) * std
        self.embedding.weight.data.uniform_(-val, val)
        self.encoder = Encoder(symbols_embedding_dim)
        self.decoder = Decoder(n_mel_channels, symbols_embedding_dim)
        self.postnet = Postnet(n_mel_channels)

    def parse_output(self, outputs, output_lengths):
        mask = ~get_mask_from_lengths(output_lengths)
        mask = mask.expand(self.n_mel_channels, mask.size(0), mask.size(1))
        mask = mask.permute(1, 0, 2)
        outputs[0] = outputs[0].masked_fill(mask, 0.0)
        outputs[1].data.masked_fill_(mask, 0.0)
        outputs[2].data.masked_fill_(mask[:, 0, :], 1e3)  # gate energies
        return outputs

    def forward(self, inputs):
        text_inputs, text_lengths, mels, max_len, output_lengths = inputs
        text_lengths, output_lengths = text_lengths.data, output_lengths.data
        embedded_inputs = self.embedding(text_inputs).transpose(1, 2)
        encoder_outputs = self.encoder(embedded_inputs, text_lengths)
        mel_outputs, gate_outputs, alignments = self.decoder(encoder_outputs, mels, memory_lengths=text_lengths)
        mel_outputs_postnet = self.postnet(mel_outputs)
        mel_outputs_postnet = mel_outputs + mel_outputs_postnet
        return self.parse_output([mel_outputs, mel_outputs_postnet, gate_outputs, alignments], output_lengths)


class Tacotron2Loss(nn.Module):
    def forward(self, model_output, targets):
        mel_target, gate_target = targets[0], targets[1]
        mel_target.requires_grad = False
        gate_target.requires_grad = False
        gate_target = gate_target.view(-1, 1)
        mel_out, mel_out_postnet, gate_out, _ = model_output
        gate_out = gate_out.view(-1, 1)
        mel_loss = nn.MSELoss()(mel_out, mel_target) + nn.MSELoss()(mel_out_postnet, mel_target)
        gate_loss = nn.BCEWithLogitsLoss()(gate_out, gate_target)
        return mel_loss + gate_loss


def text_mel_collate(batch, n_mel):
    """TextMelCollate: sort by text length, zero-pad text and mels, gate target 1 from the last frame on."""
    input_lengths, ids_sorted_decreasing = torch.sort(torch.LongTensor([len(x[0]) for x in batch]), dim=0, descending=True)
    max_input_len = input_lengths[0]
    text_padded = torch.zeros(len(batch), max_input_len, dtype=torch.long)
    for i in range(len(ids_sorted_decreasing)):
        text = batch[ids_sorted_decreasing[i]][0]
        text_padded[i, :text.size(0)] = text
    max_target_len = max([x[1].size(1) for x in batch])
    mel_padded = torch.zeros(len(batch), n_mel, max_target_len)
    gate_padded = torch.zeros(len(batch), max_target_len)
    output_lengths = torch.LongTensor(len(batch))
    for i in range(len(ids_sorted_decreasing)):
        mel = batch[ids_sorted_decreasing[i]][1]
        mel_padded[i, :, :mel.size(1)] = mel
        gate_padded[i, mel.size(1) - 1:] = 1
        output_lengths[i] = mel.size(1)
    return text_padded, input_lengths, mel_padded, gate_padded, output_lengths


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    n_mel = 6
    dataset = []
    for _ in range(8):
        L = int(torch.randint(4, 8, ()))
        text = torch.randint(1, 10, (L,))
        mel = torch.randn(n_mel, 2 * L) * 0.5 + text.float().repeat_interleave(2)[None] / 10
        dataset.append((text, mel))
    model = Tacotron2(n_mel_channels=n_mel)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-6)
    criterion = Tacotron2Loss()
    model.train()
    for iteration in range(4):
        batch = text_mel_collate(dataset[(iteration % 2) * 4:(iteration % 2) * 4 + 4], n_mel)
        text_padded, input_lengths, mel_padded, gate_padded, output_lengths = batch
        x = (text_padded, input_lengths, mel_padded, torch.max(input_lengths.data).item(), output_lengths)
        y = (mel_padded, gate_padded)
        model.zero_grad()
        y_pred = model(x)
        loss = criterion(y_pred, y)
        reduced_loss = loss.item()
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        is_overflow = math.isnan(grad_norm)
        print(f"iter {iteration} loss {reduced_loss:.4f} grad_norm {grad_norm:.3f} overflow {is_overflow}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
