"""The fixed twin: the tutorial's `h_state = h_state.data` cuts the hidden state from the last graph."""
import numpy as np
import torch
from torch import nn


class RNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(input_size=1, hidden_size=32, num_layers=1, batch_first=True)
        self.out = nn.Linear(32, 1)

    def forward(self, x, h_state):
        r_out, h_state = self.rnn(x, h_state)
        return self.out(r_out), h_state


torch.manual_seed(0)
rnn = RNN()
optimizer = torch.optim.Adam(rnn.parameters(), lr=0.02)
loss_func = nn.MSELoss()
h_state = None
for step in range(3):
    start, end = step * np.pi, (step + 1) * np.pi
    steps = np.linspace(start, end, 10, dtype=np.float32)
    x = torch.from_numpy(np.sin(steps)[np.newaxis, :, np.newaxis])
    y = torch.from_numpy(np.cos(steps)[np.newaxis, :, np.newaxis])
    prediction, h_state = rnn(x, h_state)
    h_state = h_state.data
    loss = loss_func(prediction, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
