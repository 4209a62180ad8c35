"""A ConvLSTM cell (automan000/Convolutional_LSTM_PyTorch#17): the peephole weights Wci, Wcf, Wco are plain tensors
made with requires_grad=True instead of nn.Parameters, so model.parameters() misses them; they get gradients and keep
their initial values."""
import torch
import torch.nn.functional as F
from torch import nn


class ConvLSTMCell(nn.Module):
    def __init__(self, in_ch=2, hid=4, size=6):
        super().__init__()
        self.conv = nn.Conv2d(in_ch + hid, 4 * hid, 3, padding=1)
        self.Wci = torch.zeros(1, hid, size, size, requires_grad=True)  # <- non_parameter_tensor
        self.Wcf = torch.zeros(1, hid, size, size, requires_grad=True)
        self.Wco = torch.zeros(1, hid, size, size, requires_grad=True)

    def forward(self, x, h, c):
        i, f, g, o = self.conv(torch.cat([x, h], 1)).chunk(4, 1)
        i = torch.sigmoid(i + c * self.Wci)
        f = torch.sigmoid(f + c * self.Wcf)
        c = f * c + i * torch.tanh(g)
        o = torch.sigmoid(o + c * self.Wco)
        return o * torch.tanh(c), c


torch.manual_seed(0)
cell = ConvLSTMCell()
optimizer = torch.optim.Adam(cell.parameters(), lr=1e-2)
seq, target = torch.randn(5, 2, 2, 6, 6), torch.randn(2, 4, 6, 6)
for step in range(10):
    h = c = torch.zeros(2, 4, 6, 6)
    for x in seq:
        h, c = cell(x, h, c)
    loss = F.mse_loss(h, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("Wci got grad:", cell.Wci.grad is not None, "Wci still zero:", bool((cell.Wci == 0).all()))
