"""ResNet with the last BN gamma of every residual block initialised to zero, reduced from facebookresearch/pycls
(https://github.com/facebookresearch/pycls: pycls/models/resnet.py BottleneckTransform with `c_bn.final_bn = True`,
pycls/core/net.py `init_weights` with cfg.BN.ZERO_INIT_FINAL_GAMMA and `compute_precise_bn_stats`,
pycls/core/optimizer.py `construct_optimizer` with cfg.BN.USE_CUSTOM_WEIGHT_DECAY and `set_lr`,
pycls/core/trainer.py `train_epoch` / `test_epoch`, pycls/core/meters.py `topk_errors`); the same trick as
torchvision's `resnet50(zero_init_residual=True)` ("Accurate, Large Minibatch SGD", Goyal et al.). Tiny widths,
random 3x32x32 "images", 5 classes.

Suspicious-but-correct patterns kept:
  - `m.weight.data.fill_(0.0)` for every block's final BN (`final_bn` attribute set on the module), so at the first
    step each residual branch outputs a constant and every parameter inside the branch (a, a_bn, b, b_bn, c) gets an
    all-zero gradient; only c_bn's gamma/beta get a nonzero one, and from the second step on the whole branch learns;
  - all init done through `.data` writes in `model.apply(init_weights)`;
  - BN parameters are picked by *name* (`"bn" in n`) into a param group with their own weight decay (0.0);
  - the LR is written into every `param_group["lr"]` at the start of each epoch (`set_lr`, cosine policy with
    linear warmup) instead of using an LR scheduler;
  - the train errors are computed from `preds` (still attached to the graph) after `optimizer.step()`, then
    `loss, top1_err, top5_err = loss.item(), ...`;
  - `compute_precise_bn_stats` runs extra forward passes under `@torch.no_grad()` with `bn.momentum = 1.0` and then
    *reassigns* `bn.running_mean` / `bn.running_var` with new tensors (buffers, not parameters);
  - `test_epoch` under `@torch.no_grad()` with `model.eval()`.
"""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

# pycls/core/config.py (the few cfg values used here)
ZERO_INIT_FINAL_GAMMA = True
USE_CUSTOM_WEIGHT_DECAY = True
CUSTOM_WEIGHT_DECAY = 0.0
BASE_LR, MIN_LR, MAX_EPOCH = 0.1, 0.0, 3
WARMUP_EPOCHS, WARMUP_FACTOR = 1, 0.1
MOMENTUM, WEIGHT_DECAY, NESTEROV = 0.9, 5e-4, True
NUM_SAMPLES_PRECISE = 32


# ---- pycls/models/resnet.py (stand-in) ----
class ResHead(nn.Module):
    def __init__(self, w_in, nc):
        super().__init__()
        self.avg_pool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(w_in, nc, bias=True)

    def forward(self, x):
        x = self.avg_pool(x)
        x = x.view(x.size(0), -1)
        return self.fc(x)


class BottleneckTransform(nn.Module):
    """Bottleneck transformation: 1x1, BN, ReLU, 3x3, BN, ReLU, 1x1, BN."""

    def __init__(self, w_in, w_out, stride, w_b, num_gs):
        super().__init__()
        self.a = nn.Conv2d(w_in, w_b, kernel_size=1, stride=1, padding=0, bias=False)
        self.a_bn = nn.BatchNorm2d(w_b, eps=1e-5, momentum=0.1)
        self.a_relu = nn.ReLU(inplace=True)
        self.b = nn.Conv2d(w_b, w_b, kernel_size=3, stride=stride, padding=1, groups=num_gs, bias=False)
        self.b_bn = nn.BatchNorm2d(w_b, eps=1e-5, momentum=0.1)
        self.b_relu = nn.ReLU(inplace=True)
        self.c = nn.Conv2d(w_b, w_out, kernel_size=1, stride=1, padding=0, bias=False)
        self.c_bn = nn.BatchNorm2d(w_out, eps=1e-5, momentum=0.1)
        self.c_bn.final_bn = True

    def forward(self, x):
        for layer in self.children():
            x = layer(x)
        return x


class ResBlock(nn.Module):
    """Residual block: x + F(x)"""

    def __init__(self, w_in, w_out, stride, w_b=None, num_gs=1):
        super().__init__()
        self.proj_block = (w_in != w_out) or (stride != 1)
        if self.proj_block:
            self.proj = nn.Conv2d(w_in, w_out, kernel_size=1, stride=stride, padding=0, bias=False)
            self.bn = nn.BatchNorm2d(w_out, eps=1e-5, momentum=0.1)
        self.f = BottleneckTransform(w_in, w_out, stride, w_b, num_gs)
        self.relu = nn.ReLU(True)

    def forward(self, x):
        if self.proj_block:
            x = self.bn(self.proj(x)) + self.f(x)
        else:
            x = x + self.f(x)
        x = self.relu(x)
        return x


class ResStage(nn.Module):
    def __init__(self, w_in, w_out, stride, d, w_b=None, num_gs=1):
        super().__init__()
        for i in range(d):
            b_stride = stride if i == 0 else 1
            b_w_in = w_in if i == 0 else w_out
            self.add_module("b{}".format(i + 1), ResBlock(b_w_in, w_out, b_stride, w_b, num_gs))

    def forward(self, x):
        for block in self.children():
            x = block(x)
        return x


class ResStemIN(nn.Module):
    """ResNet stem for ImageNet: 7x7, BN, ReLU, MaxPool."""

    def __init__(self, w_in, w_out):
        super().__init__()
        self.conv = nn.Conv2d(w_in, w_out, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn = nn.BatchNorm2d(w_out, eps=1e-5, momentum=0.1)
        self.relu = nn.ReLU(True)
        self.pool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)

    def forward(self, x):
        for layer in self.children():
            x = layer(x)
        return x


class ResNet(nn.Module):
    def __init__(self, nc=5):
        super().__init__()
        self.stem = ResStemIN(3, 16)
        self.s1 = ResStage(16, 32, stride=1, d=2, w_b=8)
        self.s2 = ResStage(32, 64, stride=2, d=1, w_b=16)
        self.head = ResHead(64, nc)
        self.apply(init_weights)

    def forward(self, x):
        for module in self.children():
            x = module(x)
        return x


# ---- pycls/core/net.py (stand-in) ----
def init_weights(m):
    """Performs ResNet-style weight initialization."""
    if isinstance(m, nn.Conv2d):
        # Note that there is no bias due to BN
        fan_out = m.kernel_size[0] * m.kernel_size[1] * m.out_channels
        m.weight.data.normal_(mean=0.0, std=math.sqrt(2.0 / fan_out))
    elif isinstance(m, nn.BatchNorm2d):
        zero_init_gamma = ZERO_INIT_FINAL_GAMMA
        zero_init_gamma = hasattr(m, "final_bn") and m.final_bn and zero_init_gamma
        m.weight.data.fill_(0.0 if zero_init_gamma else 1.0)
        m.bias.data.zero_()
    elif isinstance(m, nn.Linear):
        m.weight.data.normal_(mean=0.0, std=0.01)
        m.bias.data.zero_()


@torch.no_grad()
def compute_precise_bn_stats(model, loader, batch_size):
    """Computes precise BN stats on training data."""
    num_iter = min(NUM_SAMPLES_PRECISE // batch_size, len(loader))
    bns = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    mus = [torch.zeros_like(bn.running_mean) for bn in bns]
    sqs = [torch.zeros_like(bn.running_var) for bn in bns]
    moms = [bn.momentum for bn in bns]
    for bn in bns:
        bn.momentum = 1.0
    for inputs, _labels in loader[:num_iter]:  # pycls: itertools.islice(loader, num_iter)
        model(inputs)
        for i, bn in enumerate(bns):
            m, v = bn.running_mean, bn.running_var
            sqs[i] += (v + m * m) / num_iter
            mus[i] += m / num_iter
    for i, bn in enumerate(bns):
        bn.running_var = sqs[i] - mus[i] * mus[i]
        bn.running_mean = mus[i]
        bn.momentum = moms[i]


# ---- pycls/core/optimizer.py (stand-in) ----
def construct_optimizer(model):
    if USE_CUSTOM_WEIGHT_DECAY:
        # Apply different weight decay to Batchnorm and non-batchnorm parameters.
        p_bn = [p for n, p in model.named_parameters() if "bn" in n]
        p_non_bn = [p for n, p in model.named_parameters() if "bn" not in n]
        optim_params = [
            {"params": p_bn, "weight_decay": CUSTOM_WEIGHT_DECAY},
            {"params": p_non_bn, "weight_decay": WEIGHT_DECAY},
        ]
    else:
        optim_params = model.parameters()
    return torch.optim.SGD(optim_params, lr=BASE_LR, momentum=MOMENTUM, weight_decay=WEIGHT_DECAY,
                           dampening=0.0, nesterov=NESTEROV)


def lr_fun_cos(cur_epoch):
    lr = 0.5 * (1.0 + math.cos(math.pi * cur_epoch / MAX_EPOCH))
    return (1.0 - MIN_LR) * lr + MIN_LR


def get_epoch_lr(cur_epoch):
    lr = lr_fun_cos(cur_epoch) * BASE_LR
    if cur_epoch < WARMUP_EPOCHS:
        alpha = cur_epoch / WARMUP_EPOCHS
        warmup_factor = WARMUP_FACTOR * (1.0 - alpha) + alpha
        lr *= warmup_factor
    return lr


def set_lr(optimizer, new_lr):
    for param_group in optimizer.param_groups:
        param_group["lr"] = new_lr


# ---- pycls/core/meters.py (stand-in) ----
def topk_errors(preds, labels, ks):
    assert preds.size(0) == labels.size(0), "Batch dim of predictions and labels must match"
    _top_max_k_vals, top_max_k_inds = torch.topk(preds, max(ks), dim=1, largest=True, sorted=True)
    top_max_k_inds = top_max_k_inds.t()
    rep_max_k_labels = labels.view(1, -1).expand_as(top_max_k_inds)
    top_max_k_correct = top_max_k_inds.eq(rep_max_k_labels)
    topks_correct = [top_max_k_correct[:k, :].reshape(-1).float().sum() for k in ks]
    return [(1.0 - x / preds.size(0)) * 100.0 for x in topks_correct]


def scaled_all_reduce(tensors):
    """pycls/core/distributed.py: no reduction with 1 GPU."""
    return tensors


# ---- pycls/core/trainer.py (stand-in) ----
def train_epoch(train_loader, model, loss_fun, optimizer, cur_epoch, step):
    lr = get_epoch_lr(cur_epoch)
    set_lr(optimizer, lr)
    model.train()
    for cur_iter, (inputs, labels) in enumerate(train_loader):
        preds = model(inputs)
        loss = loss_fun(preds, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        top1_err, top5_err = topk_errors(preds, labels, [1, 5])
        loss, top1_err, top5_err = scaled_all_reduce([loss, top1_err, top5_err])
        loss, top1_err, top5_err = loss.item(), top1_err.item(), top5_err.item()
        print(f"step {step} loss {loss:.6f}")
        step += 1
    return step


@torch.no_grad()
def test_epoch(test_loader, model, cur_epoch):
    model.eval()
    errs = []
    for cur_iter, (inputs, labels) in enumerate(test_loader):
        preds = model(inputs)
        top1_err, _ = topk_errors(preds, labels, [1, 5])
        errs.append(top1_err.item())
    print(f"epoch {cur_epoch} test top1_err {sum(errs) / len(errs):.2f}")


def make_loader(images, labels, batch_size, shuffle):
    idx = torch.randperm(images.shape[0]) if shuffle else torch.arange(images.shape[0])
    return [(images[idx[i:i + batch_size]], labels[idx[i:i + batch_size]])
            for i in range(0, images.shape[0], batch_size)]


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    nc = 5
    prototypes = torch.randn(nc, 3, 32, 32)
    train_labels = torch.randint(0, nc, (32,))
    train_images = prototypes[train_labels] + 0.5 * torch.randn(32, 3, 32, 32)
    test_labels = torch.randint(0, nc, (16,))
    test_images = prototypes[test_labels] + 0.5 * torch.randn(16, 3, 32, 32)
    batch_size = 16

    model = ResNet(nc=nc)
    loss_fun = nn.CrossEntropyLoss()
    optimizer = construct_optimizer(model)
    step = 0
    for cur_epoch in range(MAX_EPOCH):
        train_loader = make_loader(train_images, train_labels, batch_size, shuffle=True)
        step = train_epoch(train_loader, model, loss_fun, optimizer, cur_epoch, step)
        compute_precise_bn_stats(model, train_loader, batch_size)
        test_epoch(make_loader(test_images, test_labels, batch_size, shuffle=False), model, cur_epoch)

    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
