"""SimSiam (Chen & He, 2021), reduced from the official facebookresearch/simsiam code:
https://github.com/facebookresearch/simsiam/blob/main/simsiam/builder.py and main_simsiam.py

Patterns kept (each looks like a cut but is right):
- forward returns ``z1.detach(), z2.detach()``: the stop-gradient on the target branch is the whole
  method; the encoder still learns through the predictor branch p1/p2 of the same views.
- ``self.encoder.fc[6].bias.requires_grad = False``: the projector's last Linear bias is frozen on purpose
  ("hack: not use bias as it is followed by BN" in builder.py); an affine-free BN follows, so it is useless.
- the optimizer is given ``encoder.parameters()`` including that frozen bias: SGD skips parameters whose
  ``.grad`` is None, exactly as in main_simsiam.py.
- ``fix_pred_lr``: the predictor's param group keeps its initial lr while the cosine schedule rewrites the
  other group's ``param_group['lr']`` every epoch.
- torchvision ResNet with ``zero_init_residual=True``: the last BN gamma of every block starts at zero but
  still receives gradient (the block output depends on it linearly).
"""
import math
import os

import torch
import torch.nn as nn
import torchvision


class SimSiam(nn.Module):
    def __init__(self, base_encoder, dim=64, pred_dim=16):
        super().__init__()
        self.encoder = base_encoder(num_classes=dim, zero_init_residual=True)
        prev_dim = self.encoder.fc.weight.shape[1]
        self.encoder.fc = nn.Sequential(
            nn.Linear(prev_dim, prev_dim, bias=False), nn.BatchNorm1d(prev_dim), nn.ReLU(inplace=True),
            nn.Linear(prev_dim, prev_dim, bias=False), nn.BatchNorm1d(prev_dim), nn.ReLU(inplace=True),
            self.encoder.fc,
            nn.BatchNorm1d(dim, affine=False))
        self.encoder.fc[6].bias.requires_grad = False  # hack: not use bias as it is followed by BN
        self.predictor = nn.Sequential(
            nn.Linear(dim, pred_dim, bias=False), nn.BatchNorm1d(pred_dim), nn.ReLU(inplace=True),
            nn.Linear(pred_dim, dim))

    def forward(self, x1, x2):
        z1 = self.encoder(x1)
        z2 = self.encoder(x2)
        p1 = self.predictor(z1)
        p2 = self.predictor(z2)
        return p1, p2, z1.detach(), z2.detach()


def augment(x):
    # stand-in for the two random crops: random flip plus colour noise
    flip = torch.rand(x.shape[0], 1, 1, 1) < 0.5
    x = torch.where(flip, x.flip(3), x)
    return x + 0.1 * torch.randn_like(x)


def adjust_learning_rate(optimizer, init_lr, epoch, epochs):
    cur_lr = init_lr * 0.5 * (1. + math.cos(math.pi * epoch / epochs))
    for param_group in optimizer.param_groups:
        if 'fix_lr' in param_group and param_group['fix_lr']:
            param_group['lr'] = init_lr
        else:
            param_group['lr'] = cur_lr


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = SimSiam(torchvision.models.resnet18, dim=64, pred_dim=16)
    criterion = nn.CosineSimilarity(dim=1)
    batch_size, base_lr, epochs = 8, 0.05, 4
    init_lr = base_lr * batch_size / 256 * 20  # scaled up so a few steps move the weights
    optim_params = [{'params': model.encoder.parameters(), 'fix_lr': False},
                    {'params': model.predictor.parameters(), 'fix_lr': True}]
    optimizer = torch.optim.SGD(optim_params, init_lr, momentum=0.9, weight_decay=1e-4)
    images = torch.randn(batch_size, 3, 16, 16)
    model.train()
    for epoch in range(epochs):
        adjust_learning_rate(optimizer, init_lr, epoch, epochs)
        x1, x2 = augment(images), augment(images)
        p1, p2, z1, z2 = model(x1=x1, x2=x2)
        loss = -(criterion(p1, z2).mean() + criterion(p2, z1).mean()) * 0.5
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()},
                   os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
