"""cnslab_fmri's run_training_lstm.py (sgadgil6/cnslab_fmri#4): fMRI_LSTM keeps `self.hidden` from init_hidden() and
its forward runs `lstm_out, self.hidden = self.lstm(x, self.hidden)`, so each batch starts from the previous batch's
state with its graph attached; the second `loss.backward()` fails with "Trying to backward through the graph a
second time" (retain_graph=True only ran out of memory). The fix posted in the thread: don't pass the stored hidden
state, `lstm_out, self.hidden = self.lstm(x)`."""
import torch
from torch import nn


class fMRI_LSTM(nn.Module):
    def __init__(self, hidden_dim, input_dim, batch_size=8):
        super().__init__()
        self.hidden_dim, self.batch_size = hidden_dim, batch_size
        self.lstm = nn.LSTM(input_dim, hidden_dim, num_layers=1, batch_first=True)
        self.linear = nn.Linear(hidden_dim, 1)
        self.hidden = self.init_hidden()
        self.dropout = nn.Dropout(p=0.2)
        self.activate = nn.Sigmoid()

    def init_hidden(self):
        return (torch.randn(1, self.batch_size, self.hidden_dim), torch.randn(1, self.batch_size, self.hidden_dim))

    def forward(self, x):
        lstm_out, self.hidden = self.lstm(x)
        lstm_out = lstm_out[:, -1, :]
        return self.activate(self.linear(self.dropout(lstm_out)))


torch.manual_seed(0)
model = fMRI_LSTM(hidden_dim=16, input_dim=10)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.BCELoss()
before = {n: p.detach().clone() for n, p in model.named_parameters()}
for epoch in range(3):
    x = torch.randn(8, 20, 10)  # (subjects, time points, ROIs)
    y = torch.randint(0, 2, (8, 1)).float()
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
for n, p in model.named_parameters():
    print(n, "grad", p.grad is not None, "changed", not torch.equal(before[n], p))
