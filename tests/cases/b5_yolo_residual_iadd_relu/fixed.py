"""The fixed twin: the shortcut is added out of place, `out = out + residual`."""
import torch
from torch import nn


class Convolutional(nn.Module):
    def __init__(self, filters_in, filters_out, kernel_size, stride=1, activate="relu"):
        super().__init__()
        self.__conv = nn.Conv2d(filters_in, filters_out, kernel_size, stride, kernel_size // 2, bias=False)
        self.__norm = nn.BatchNorm2d(filters_out)
        self.__activate = nn.ReLU(inplace=True) if activate == "relu" else nn.Identity()

    def forward(self, x):
        return self.__activate(self.__norm(self.__conv(x)))


class CSPBlock(nn.Module):
    def __init__(self, in_channels, out_channels, hidden_channels=None, residual_activation="relu"):
        super().__init__()
        hidden_channels = hidden_channels or out_channels
        self.block = nn.Sequential(Convolutional(in_channels, hidden_channels, 1),
                                   Convolutional(hidden_channels, out_channels, 3, activate=residual_activation))

    def forward(self, x):
        residual = x
        out = self.block(x)
        out = out + residual
        return out


class CSPStage(nn.Module):
    def __init__(self, channels, num_blocks=2):
        super().__init__()
        self.stem = Convolutional(3, channels, 3, stride=2)
        self.blocks = nn.Sequential(*[CSPBlock(channels, channels) for _ in range(num_blocks)])
        self.head = nn.Conv2d(channels, 6, 1)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)))


torch.manual_seed(0)
model = CSPStage(8)
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
images, targets = torch.randn(2, 3, 16, 16), torch.randn(2, 6, 8, 8)
for step in range(2):
    loss = nn.functional.mse_loss(model(images), targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
