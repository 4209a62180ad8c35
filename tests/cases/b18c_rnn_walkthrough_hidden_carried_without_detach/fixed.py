"""gabrielloye/RNN-walkthrough, https://github.com/gabrielloye/RNN-walkthrough/issues/3

What the user saw: the notebook's Model.forward re-creates a zero hidden state on every call. The user
kept the hidden state on the model instead (``out, self.hidden = self.rnn(x, self.hidden)``) so that it
carries over between iterations; without ``.detach()`` that "causes all kinds of pytorch errors": the
second backward raises "Trying to backward through the graph a second time".
Why: self.hidden still holds the graph of the previous iteration, which the first backward freed.
Fix (the user's own): pass ``self.hidden.detach()`` into the RNN.
"""
import torch
import torch.nn as nn

torch.manual_seed(0)


class Model(nn.Module):
    def __init__(self, input_size, output_size, hidden_dim, n_layers):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.n_layers = n_layers
        self.rnn = nn.RNN(input_size, hidden_dim, n_layers, batch_first=True)
        self.fc = nn.Linear(hidden_dim, output_size)
        self.hidden = torch.zeros(n_layers, 3, hidden_dim)

    def forward(self, x):
        out, self.hidden = self.rnn(x, self.hidden.detach())
        out = out.contiguous().view(-1, self.hidden_dim)
        out = self.fc(out)
        return out, self.hidden


dict_size, seq_len = 6, 5
input_seq = torch.eye(dict_size)[torch.randint(0, dict_size, (3, seq_len))]
target_seq = torch.randint(0, dict_size, (3, seq_len))

model = Model(input_size=dict_size, output_size=dict_size, hidden_dim=12, n_layers=1)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

for epoch in range(1, 6):
    optimizer.zero_grad()
    output, hidden = model(input_seq)
    loss = criterion(output, target_seq.view(-1).long())
    loss.backward()
    optimizer.step()
    print("Epoch: {} Loss: {:.4f}".format(epoch, loss.item()))
