# [Bug] Bug in resnet's plugin  (open-mmlab/mmdetection)
# https://github.com/open-mmlab/mmdetection/issues/7795
# What went wrong: Bottleneck.forward_plugin() fed the block input `x` to every plugin
# instead of chaining `out`, so with several plugins at one position only the last one
# is on the path to the loss; the earlier plugins' parameters never get a gradient.
# Fix (confirmed by maintainer): `out = getattr(self, name)(out)`.
import torch
import torch.nn as nn

torch.manual_seed(0)


class ContextBlock(nn.Module):
    """Tiny stand-in for mmcv's ContextBlock plugin (GCNet)."""

    def __init__(self, in_channels, ratio=0.25):
        super().__init__()
        planes = max(int(in_channels * ratio), 1)
        self.conv_mask = nn.Conv2d(in_channels, 1, kernel_size=1)
        self.channel_add_conv = nn.Sequential(
            nn.Conv2d(in_channels, planes, kernel_size=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(planes, in_channels, kernel_size=1))

    def forward(self, x):
        n, c, h, w = x.shape
        mask = self.conv_mask(x).view(n, 1, h * w).softmax(dim=2)
        context = torch.bmm(x.view(n, c, h * w), mask.transpose(1, 2)).view(n, c, 1, 1)
        return x + self.channel_add_conv(context)


def build_plugin_layer(cfg, in_channels, postfix=''):
    name = 'context_block' + str(postfix)
    return name, ContextBlock(in_channels, ratio=cfg.get('ratio', 0.25))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, plugins=None):
        super().__init__()
        self.with_plugins = plugins is not None
        if self.with_plugins:
            self.after_conv3_plugins = [
                plugin['cfg'] for plugin in plugins
                if plugin['position'] == 'after_conv3'
            ]
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * self.expansion, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        if self.with_plugins:
            self.after_conv3_plugin_names = self.make_block_plugins(
                planes * self.expansion, self.after_conv3_plugins)

    def make_block_plugins(self, in_channels, plugins):
        plugin_names = []
        for plugin in plugins:
            plugin = plugin.copy()
            name, layer = build_plugin_layer(
                plugin, in_channels=in_channels, postfix=plugin.pop('postfix', ''))
            assert not hasattr(self, name), f'duplicate plugin {name}'
            self.add_module(name, layer)
            plugin_names.append(name)
        return plugin_names

    def forward_plugin(self, x, plugin_names):
        out = x
        for name in plugin_names:
            out = getattr(self, name)(x)  # <- unused_parameter
        return out

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.with_plugins:
            out = self.forward_plugin(out, self.after_conv3_plugin_names)
        out = out + identity
        return self.relu(out)


plugins = [
    dict(cfg=dict(type='ContextBlock', ratio=0.25, postfix='1'), position='after_conv3'),
    dict(cfg=dict(type='ContextBlock', ratio=0.25, postfix='2'), position='after_conv3'),
]
block = Bottleneck(inplanes=16, planes=4, plugins=plugins)
optimizer = torch.optim.SGD(block.parameters(), lr=0.01, momentum=0.9)

x = torch.randn(2, 16, 8, 8)
target = torch.randn(2, 16, 8, 8)
for it in range(2):
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(block(x), target)
    loss.backward()
    optimizer.step()
    print(f'iter {it} loss {loss.item():.4f}')

print('context_block2 grad:', block.context_block2.channel_add_conv[0].weight.grad.abs().sum().item())
g = block.context_block1.channel_add_conv[0].weight.grad
print('context_block1 grad:', g)
