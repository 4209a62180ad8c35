"""CSDN blog (windhawk_fly, article 143405685): an LSTM language model carries (h0, c0) from batch to batch. The
second loss.backward() first raised "Trying to backward through the graph a second time"; with the suggested
backward(retain_graph=True) it raises "one of the variables needed for gradient computation has been modified by an
inplace operation: [torch.FloatTensor [128, 6]] ... is at version 2": optimizer.step() rewrote the LSTM weights that
the previous batch's graph, still reached through h0/c0, saved. The post's fix detaches the hidden state."""
import torch
from torch import nn

num_layers, batch_size, hidden_dim, embedding_dim, vocab = 1, 4, 32, 6, 20


class LSTMModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(vocab, embedding_dim)
        self.lstm = nn.LSTM(embedding_dim, hidden_dim, num_layers, batch_first=True)
        self.fc = nn.Linear(hidden_dim, embedding_dim)

    def forward(self, x, h0, c0):
        out, (h, c) = self.lstm(self.embed(x), (h0, c0))
        return self.fc(out), (h, c)


torch.manual_seed(0)
lstm = LSTMModel()
optimizer = torch.optim.Adam(lstm.parameters(), lr=1e-3)
loss_fn = nn.MSELoss()
data_loader = [(torch.randint(0, vocab, (batch_size, 5)), torch.randn(batch_size, 5, embedding_dim)) for _ in range(3)]
for epoch in range(1):
    h0 = torch.randn((num_layers, batch_size, hidden_dim), requires_grad=False)
    c0 = torch.randn((num_layers, batch_size, hidden_dim), requires_grad=False)
    for batch in data_loader:
        optimizer.zero_grad()
        output, (h0, c0) = lstm(batch[0], h0, c0)
        loss = loss_fn(output.reshape(-1, embedding_dim), batch[1].reshape(-1, embedding_dim))
        loss.backward(retain_graph=True)
        optimizer.step()  # <- inplace_saved
        print(f"epoch {epoch}: loss {loss.item():.4f}")
