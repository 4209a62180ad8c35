"""fMRI LSTM (sgadgil6/cnslab_fmri#4): forward feeds self.hidden into the LSTM and stores the new state back on the
module, so the next batch's graph runs into the previous batch's graph, whose buffers the first backward freed;
the second loss.backward() raises "Trying to backward through the graph a second time" (retain_graph=True only
runs out of memory; the fix does not pass the hidden state)."""
import torch
import torch.nn.functional as F
from torch import nn


class fMRI_LSTM(nn.Module):
    def __init__(self, hidden_dim=16, input_dim=10, batch=8):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.lstm = nn.LSTM(input_dim, hidden_dim, num_layers=1, batch_first=True)
        self.linear = nn.Linear(hidden_dim, 1)
        self.hidden = (torch.randn(1, batch, hidden_dim), torch.randn(1, batch, hidden_dim))

    def forward(self, x):
        lstm_out, self.hidden = self.lstm(x, self.hidden)  # <- autograd_error
        return torch.sigmoid(self.linear(lstm_out[:, -1, :]))


torch.manual_seed(0)
model = fMRI_LSTM()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(4):
    x, y = torch.randn(8, 12, 10), torch.randint(0, 2, (8, 1)).float()
    loss = F.binary_cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
