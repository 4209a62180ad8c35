"""The fixed twin: the hidden state is detached after each batch (the CSDN post's fix), so each backward walks its
own batch's graph only; retain_graph=True is kept as the post had it."""
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
        h0, c0 = h0.detach(), c0.detach()
        loss = loss_fn(output.reshape(-1, embedding_dim), batch[1].reshape(-1, embedding_dim))
        loss.backward(retain_graph=True)
        optimizer.step()
        print(f"epoch {epoch}: loss {loss.item():.4f}")
before = [p.detach().clone() for p in lstm.parameters()]
output, _ = lstm(data_loader[0][0], h0, c0)
optimizer.zero_grad()
loss_fn(output.reshape(-1, embedding_dim), data_loader[0][1].reshape(-1, embedding_dim)).backward()
optimizer.step()
for (name, p), b in zip(lstm.named_parameters(), before):
    assert p.grad is not None and not torch.equal(p, b), name
print("every parameter got a gradient and changed")
