"""Style transfer in the shape of pytorch/examples fast_neural_style: a transformer net trained
against a frozen loss network (requires_grad=False), gram matrices, content + style loss."""
import os

import torch
import torch.nn as nn


class ConvLayer(nn.Module):
    def __init__(self, cin, cout, kernel_size, stride):
        super().__init__()
        self.reflection_pad = nn.ReflectionPad2d(kernel_size // 2)
        self.conv2d = nn.Conv2d(cin, cout, kernel_size, stride)

    def forward(self, x):
        return self.conv2d(self.reflection_pad(x))


class TransformerNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = ConvLayer(3, 8, 3, 1)
        self.in1 = nn.InstanceNorm2d(8, affine=True)
        self.conv2 = ConvLayer(8, 3, 3, 1)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.conv2(self.relu(self.in1(self.conv1(x))))


class LossNet(nn.Module):
    def __init__(self, requires_grad=False):
        super().__init__()
        self.slice1 = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())
        self.slice2 = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.ReLU())
        if not requires_grad:
            for param in self.parameters():
                param.requires_grad = False

    def forward(self, x):
        h1 = self.slice1(x)
        return h1, self.slice2(h1)


def gram_matrix(y):
    (b, ch, h, w) = y.size()
    features = y.view(b, ch, w * h)
    return features.bmm(features.transpose(1, 2)) / (ch * h * w)


def main():
    torch.manual_seed(42)
    torch.set_num_threads(1)
    transformer = TransformerNet()
    optimizer = torch.optim.Adam(transformer.parameters(), 1e-3)
    mse_loss = torch.nn.MSELoss()
    vgg = LossNet(requires_grad=False)
    style = torch.rand(1, 3, 12, 12)
    gram_style = [gram_matrix(y) for y in vgg(style)]
    content_weight, style_weight = 1e5, 1e10
    for batch_id in range(4):
        x = torch.rand(2, 3, 12, 12)
        optimizer.zero_grad()
        y = transformer(x)
        features_y = vgg(y)
        features_x = vgg(x)
        content_loss = content_weight * mse_loss(features_y[1], features_x[1])
        style_loss = 0.0
        for ft_y, gm_s in zip(features_y, gram_style):
            gm_y = gram_matrix(ft_y)
            style_loss += mse_loss(gm_y, gm_s[:2, :, :].expand_as(gm_y))
        style_loss *= style_weight
        total_loss = content_loss + style_loss
        total_loss.backward()
        optimizer.step()
        print(f"batch {batch_id}\tcontent: {content_loss.item():.4f}\tstyle: {style_loss.item():.4f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(transformer.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
