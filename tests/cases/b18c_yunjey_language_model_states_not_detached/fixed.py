"""yunjey/pytorch-tutorial, https://github.com/yunjey/pytorch-tutorial/issues/90

What the user asked: in the RNN language model tutorial, why is there a line ``states = detach(states)``
and what does it do? Leaving it out (this script) makes the second batch's backward raise
"Trying to backward through the graph a second time": the (h, c) states carried from the previous batch
still hold that batch's graph, which the previous backward freed.
Fix (the tutorial's, from the pytorch word_language_model example): truncated backpropagation through
time, detach the carried states before each batch: ``states = [state.detach() for state in states]``.
"""
import torch
import torch.nn as nn

torch.manual_seed(0)
embed_size, hidden_size, num_layers = 8, 16, 1
batch_size, seq_length, vocab_size = 4, 5, 20


class RNNLM(nn.Module):
    def __init__(self, vocab_size, embed_size, hidden_size, num_layers):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_size)
        self.lstm = nn.LSTM(embed_size, hidden_size, num_layers, batch_first=True)
        self.linear = nn.Linear(hidden_size, vocab_size)

    def forward(self, x, h):
        out, (h, c) = self.lstm(self.embed(x), h)
        out = out.reshape(out.size(0) * out.size(1), out.size(2))
        return self.linear(out), (h, c)


model = RNNLM(vocab_size, embed_size, hidden_size, num_layers)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.002)
ids = torch.randint(0, vocab_size, (batch_size, 4 * seq_length + 1))

states = (torch.zeros(num_layers, batch_size, hidden_size),
          torch.zeros(num_layers, batch_size, hidden_size))
for i in range(0, ids.size(1) - seq_length, seq_length):
    inputs = ids[:, i:i + seq_length]
    targets = ids[:, (i + 1):(i + 1) + seq_length]
    states = [state.detach() for state in states]
    outputs, states = model(inputs, states)
    loss = criterion(outputs, targets.reshape(-1))
    model.zero_grad()
    loss.backward()
    optimizer.step()
    print(i // seq_length, round(loss.item(), 4))
