"""vikrant7/mobile-vod-bottleneck-lstm issue #25, "Runtime error of inplace operation",
https://github.com/vikrant7/mobile-vod-bottleneck-lstm/issues/25: training the Bottleneck-LSTM video detector with
train_mvod_lstm5.py raises "RuntimeError: one of the variables needed for gradient computation has been modified by
an inplace operation". Each BottleneckLSTM keeps its hidden_state / cell_state as module attributes and feeds them to
the next frame. train() runs, for every frame of a sequence, loss.backward(retain_graph=True) and optimizer.step(),
but calls net.detach_hidden() only once the whole sequence is done. So frame 2's loss reaches back through frame 1's
graph, whose convolutions saved the LSTM weights that optimizer.step() has meanwhile updated in place: the backward
refuses. The answer (hebangwen): the hidden state is not detached right away; move net.detach_hidden() into the inner
per-frame loop, next to the running-loss bookkeeping. The script is a small stand-in (one encoder conv, one
BottleneckLSTM, one SSD-like head, an MSE loss); it raises the RuntimeError."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)


class BottleneckLSTMCell(nn.Module):
    def __init__(self, input_channels, hidden_channels):
        super(BottleneckLSTMCell, self).__init__()
        self.W = nn.Conv2d(input_channels, input_channels, kernel_size=3, groups=input_channels, stride=1, padding=1)
        self.Wy = nn.Conv2d(input_channels + hidden_channels, hidden_channels, kernel_size=1)
        self.Wi = nn.Conv2d(hidden_channels, hidden_channels, 3, 1, 1, groups=hidden_channels, bias=False)
        self.Wbi = nn.Conv2d(hidden_channels, hidden_channels, 1, 1, 0, bias=False)
        self.Wbf = nn.Conv2d(hidden_channels, hidden_channels, 1, 1, 0, bias=False)
        self.Wbc = nn.Conv2d(hidden_channels, hidden_channels, 1, 1, 0, bias=False)
        self.Wbo = nn.Conv2d(hidden_channels, hidden_channels, 1, 1, 0, bias=False)

    def forward(self, x, h, c):
        x = self.W(x)
        y = torch.cat((x, h), 1)
        i = self.Wy(y)
        b = self.Wi(i)
        ci = torch.sigmoid(self.Wbi(b))
        cf = torch.sigmoid(self.Wbf(b))
        cc = cf * c + ci * F.relu6(self.Wbc(b))
        co = torch.sigmoid(self.Wbo(b))
        ch = co * F.relu6(cc)
        return ch, cc


class BottleneckLSTM(nn.Module):
    def __init__(self, input_channels, hidden_channels, height, width, batch_size):
        super(BottleneckLSTM, self).__init__()
        self.cell = BottleneckLSTMCell(input_channels, hidden_channels)
        self.hidden_state = torch.zeros(batch_size, hidden_channels, height, width)
        self.cell_state = torch.zeros(batch_size, hidden_channels, height, width)

    def forward(self, input):
        new_h, new_c = self.cell(input, self.hidden_state, self.cell_state)
        self.hidden_state = new_h
        self.cell_state = new_c
        return self.hidden_state


class MobileVOD(nn.Module):
    def __init__(self, batch_size=1):
        super(MobileVOD, self).__init__()
        self.pred_encoder = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU6())
        self.bottleneck_lstm1 = BottleneckLSTM(16, 8, height=8, width=8, batch_size=batch_size)
        self.header = nn.Conv2d(8, 6 * 4, kernel_size=3, padding=1)

    def forward(self, seq):
        x = self.pred_encoder(seq)
        x = self.bottleneck_lstm1(x)
        return self.header(x)

    def detach_hidden(self):
        self.bottleneck_lstm1.hidden_state.detach_()
        self.bottleneck_lstm1.cell_state.detach_()


net = MobileVOD()
criterion = nn.MSELoss()
optimizer = torch.optim.RMSprop(net.parameters(), lr=1e-3, momentum=0.9, weight_decay=5e-4)
loader = [(torch.randn(4, 1, 3, 16, 16), torch.randn(4, 1, 24, 8, 8)) for _ in range(2)]  # 2 videos of 4 frames
w_before = net.bottleneck_lstm1.cell.Wy.weight.detach().clone()

net.train(True)
running_loss = 0.0
for i, data in enumerate(loader):
    images, targets = data
    for image, target in zip(images, targets):
        optimizer.zero_grad()
        locations = net(image)
        loss = criterion(locations, target)
        loss.backward(retain_graph=True)
        optimizer.step()

        running_loss += loss.item()
        net.detach_hidden()

print("average loss:", running_loss / 8)
print("Wy changed:", not torch.equal(w_before, net.bottleneck_lstm1.cell.Wy.weight))
