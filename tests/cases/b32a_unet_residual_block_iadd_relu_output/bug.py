"""fepegar/unet issue #36 "Error with inplace operations due to recent changes in pytorch",
https://github.com/fepegar/unet/issues/36 (fixed by PR #37): `unet.UNet2D(in_channels=3, out_classes=10,
residual=True, num_encoding_blocks=2)` trained with BCEWithLogitsLoss fails at loss.backward() with
"one of the variables needed for gradient computation has been modified by an inplace operation ...
output 0 of ReluBackward0". With residual=True, EncodingBlock.forward and DecodingBlock.forward add the
1x1 residual projection in place, `x += connection`, into the output of conv2, a ConvolutionalBlock
whose last layer is the ReLU that saved that very tensor for backward. PR #37 replaced the in-place
adds with `x = x + connection`.
A compact copy of the package's ConvolutionalBlock / EncodingBlock / DecodingBlock / UNet with fewer
channels; the reporter's script (which passed loss_fn(targets, out)) is wrapped in a short Adam loop."""
import torch
import torch.nn as nn

torch.set_num_threads(1)


class ConvolutionalBlock(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size=3, activation='ReLU'):
        super().__init__()
        block = [nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)]
        if activation is not None:
            block.append(getattr(nn, activation)())
        self.block = nn.Sequential(*block)

    def forward(self, x):
        return self.block(x)


class EncodingBlock(nn.Module):
    def __init__(self, in_channels, out_channels, residual=False, pooling=True):
        super().__init__()
        self.residual = residual
        self.conv1 = ConvolutionalBlock(in_channels, out_channels)
        self.conv2 = ConvolutionalBlock(out_channels, out_channels)
        if residual:
            self.conv_residual = ConvolutionalBlock(in_channels, out_channels, kernel_size=1, activation=None)
        self.downsample = nn.MaxPool2d(2) if pooling else None

    def forward(self, x):
        if self.residual:
            connection = self.conv_residual(x)
            x = self.conv1(x)
            x = self.conv2(x)
            x += connection
        else:
            x = self.conv1(x)
            x = self.conv2(x)
        if self.downsample is None:
            return x
        skip_connection = x
        x = self.downsample(x)
        return x, skip_connection


class DecodingBlock(nn.Module):
    def __init__(self, in_channels_skip_connection, residual=False):
        super().__init__()
        self.residual = residual
        self.upsample = nn.Upsample(scale_factor=2, mode='nearest')
        in_channels_first = in_channels_skip_connection * (1 + 2)
        out_channels = in_channels_skip_connection
        self.conv1 = ConvolutionalBlock(in_channels_first, out_channels)
        self.conv2 = ConvolutionalBlock(out_channels, out_channels)
        if residual:
            self.conv_residual = ConvolutionalBlock(in_channels_first, out_channels, kernel_size=1, activation=None)

    def forward(self, skip_connection, x):
        x = self.upsample(x)
        x = torch.cat((skip_connection, x), dim=1)
        if self.residual:
            connection = self.conv_residual(x)
            x = self.conv1(x)
            x = self.conv2(x)
            x += connection  # <- inplace_saved
        else:
            x = self.conv1(x)
            x = self.conv2(x)
        return x


class UNet2D(nn.Module):
    def __init__(self, in_channels=3, out_classes=10, residual=False, num_encoding_blocks=2, out_channels_first=8):
        super().__init__()
        self.encoder = EncodingBlock(in_channels, out_channels_first, residual=residual)
        self.bottom_block = EncodingBlock(out_channels_first, 2 * out_channels_first, residual=residual,
                                          pooling=False)
        self.decoder = DecodingBlock(out_channels_first, residual=residual)
        self.classifier = ConvolutionalBlock(out_channels_first, out_classes, kernel_size=1, activation=None)

    def forward(self, x):
        x, skip_connection = self.encoder(x)
        x = self.bottom_block(x)
        x = self.decoder(skip_connection, x)
        return self.classifier(x)


torch.manual_seed(0)
loss_fn = torch.nn.BCEWithLogitsLoss()
unet_model = UNet2D(in_channels=3, out_classes=10, residual=True, num_encoding_blocks=2)
optimizer = torch.optim.Adam(unet_model.parameters(), lr=1e-3)
w0 = unet_model.decoder.conv2.block[0].weight.detach().clone()
for step in range(3):
    input = torch.randn([8, 3, 24, 24])
    targets = (torch.rand([8, 10, 24, 24]) > 0.5).float()
    out = unet_model(input)
    loss = loss_fn(out, targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print("step", step, "loss", round(loss.item(), 4))
print("decoder conv2 weight changed:", not torch.equal(w0, unet_model.decoder.conv2.block[0].weight))
