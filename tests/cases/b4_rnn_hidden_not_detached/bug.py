"""MorvanZhou's RNN regression tutorial with `h_state = h_state.data` commented out
(MorvanZhou/PyTorch-Tutorial#57): the hidden state carries the previous step's graph into the next
one, whose backward raises "Trying to backward through the graph a second time"."""
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
    prediction, h_state = rnn(x, h_state)  # <- autograd_error
    loss = loss_func(prediction, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
