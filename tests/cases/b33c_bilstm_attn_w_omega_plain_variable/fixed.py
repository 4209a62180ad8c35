"""u784799i/biLSTM_attn issue #3, "我认为的一些bug" (some bugs, I think),
https://github.com/u784799i/biLSTM_attn/issues/3: model.py's bilstm_attn (a BiLSTM text classifier with additive
attention over the LSTM outputs) makes its attention weights as
    self.w_omega = Variable(torch.zeros(hidden_size * layer_size, attention_size))
    self.u_omega = Variable(torch.zeros(attention_size))
Variable() is a no-op since PyTorch 0.4: these are plain zero tensors, not nn.Parameters, so they are in no
lstm_attn.parameters(), the Adam optimizer of main.py never sees them and no backward gives them a gradient. The
attention scores stay exp(0) = 1 and alphas stay uniform (1/sequence_length) for the whole run; the issue's first
item (a reshape over the wrong axis in attention_net) "does not show because of item 2" for exactly this reason.
Fix: register them as nn.Parameters (with a small random init: with both at zero their gradients are exactly zero).
The reshape bug of item 1 is left out of both scripts; data are random token ids with random labels."""
import torch
import torch.nn as nn
from torch.autograd import Variable

torch.manual_seed(1111)
torch.set_num_threads(1)

batch_size, sequence_length, vocab_size, embed_dim = 16, 16, 50, 64
hidden_size, attention_size, output_size = 32, 16, 2


class bilstm_attn(torch.nn.Module):
    def __init__(self, batch_size, output_size, hidden_size, vocab_size, embed_dim, attention_size, sequence_length):
        super(bilstm_attn, self).__init__()
        self.batch_size = batch_size
        self.hidden_size = hidden_size
        self.sequence_length = sequence_length
        self.lookup_table = nn.Embedding(vocab_size, embed_dim, padding_idx=0)
        self.lookup_table.weight.data.uniform_(-1., 1.)
        self.layer_size = 1
        self.lstm = nn.LSTM(embed_dim, hidden_size, self.layer_size, bidirectional=True)
        self.layer_size = self.layer_size * 2
        self.attention_size = attention_size
        self.w_omega = nn.Parameter(0.1 * torch.randn(self.hidden_size * self.layer_size, self.attention_size))
        self.u_omega = nn.Parameter(0.1 * torch.randn(self.attention_size))
        self.label = nn.Linear(hidden_size * self.layer_size, output_size)

    def attention_net(self, lstm_output):
        output_reshape = torch.Tensor.reshape(lstm_output, [-1, self.hidden_size * self.layer_size])
        attn_tanh = torch.tanh(torch.mm(output_reshape, self.w_omega))
        attn_hidden_layer = torch.mm(attn_tanh, torch.Tensor.reshape(self.u_omega, [-1, 1]))
        exps = torch.Tensor.reshape(torch.exp(attn_hidden_layer), [-1, self.sequence_length])
        alphas = exps / torch.Tensor.reshape(torch.sum(exps, 1), [-1, 1])
        alphas_reshape = torch.Tensor.reshape(alphas, [-1, self.sequence_length, 1])
        state = lstm_output.permute(1, 0, 2)
        attn_output = torch.sum(state * alphas_reshape, 1)
        return attn_output, alphas

    def forward(self, input_sentences):
        input = self.lookup_table(input_sentences).permute(1, 0, 2)
        h_0 = Variable(torch.zeros(self.layer_size, self.batch_size, self.hidden_size))
        c_0 = Variable(torch.zeros(self.layer_size, self.batch_size, self.hidden_size))
        lstm_output, (final_hidden_state, final_cell_state) = self.lstm(input, (h_0, c_0))
        attn_output, alphas = self.attention_net(lstm_output)
        return self.label(attn_output), alphas


lstm_attn = bilstm_attn(batch_size, output_size, hidden_size, vocab_size, embed_dim, attention_size, sequence_length)
optimizer = torch.optim.Adam(lstm_attn.parameters(), lr=0.001, weight_decay=0.001)
criterion = torch.nn.CrossEntropyLoss()
training_data = [(torch.randint(1, vocab_size, (batch_size, sequence_length)), torch.randint(0, output_size, (batch_size,)))
                 for _ in range(4)]
w_before = lstm_attn.w_omega.detach().clone()

for epoch in range(1, 3):
    for data, label in training_data:
        optimizer.zero_grad()
        target, alphas = lstm_attn(data)
        loss = criterion(target, label)
        loss.backward()
        optimizer.step()

g = lstm_attn.w_omega.grad
print("w_omega.grad:", None if g is None else "norm %.3g" % g.norm().item())
print("w_omega changed:", not torch.equal(w_before, lstm_attn.w_omega.detach()))
print("alphas spread (max - min):", (alphas.max() - alphas.min()).item())
