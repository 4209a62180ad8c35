"""Quantization-aware fine-tuning with Learned Step Size Quantization (LSQ, Esser et al. 2020), reduced
from zhutmost/lsq-net (https://github.com/zhutmost/lsq-net: quan/quantizer/lsq.py, quan/func.py,
quan/utils.py ``replace_module_by_names``, main.py).

Patterns kept (each looks like a cut but is right):
- ``round_pass(x) = (x.round() - x).detach() + x``: the straight-through estimator; the forward value is
  rounded, the backward is the identity, so weights and activations still get gradients.
- ``grad_scale(s, scale) = (s - s * scale).detach() + s * scale``: forward value ``s``, gradient scaled by
  ``scale``; the step size ``s`` learns with the rescaled gradient the paper prescribes.
- ``init_from``: ``self.s = nn.Parameter(x.detach().abs().mean(...) * 2 / sqrt(thd_pos))`` replaces the
  placeholder ``s`` Parameter with a data-initialised one at conversion time, before the optimizer exists.
- ``QuanConv2d.__init__`` takes over the pretrained weights with ``self.weight = nn.Parameter(
  m.weight.detach())``: construction from a trained float layer, not a cut inside a forward pass.
- the first conv and the last fc are deliberately left in full precision (lsq-net's example config lists
  them under ``excepts`` without a bit width, which maps to an identity quantizer); they keep training
  with the rest.
- the activation quantizer's ``s`` keeps its ``torch.ones(1)`` start (no ``init_from`` for activations in
  lsq-net) and learns through ``grad_scale`` like the weight step sizes.
- ``torch.clamp(x, thd_neg, thd_pos)``: values outside the range get no gradient, which LSQ intends.
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


def grad_scale(x, scale):
    y = x
    y_grad = x * scale
    return (y - y_grad).detach() + y_grad


def round_pass(x):
    y = x.round()
    y_grad = x
    return (y - y_grad).detach() + y_grad


class LsqQuan(nn.Module):
    def __init__(self, bit, all_positive=False, symmetric=False, per_channel=True):
        super().__init__()
        if all_positive:
            assert not symmetric, "Positive quantization cannot be symmetric"
            self.thd_neg, self.thd_pos = 0, 2 ** bit - 1
        elif symmetric:
            self.thd_neg, self.thd_pos = -2 ** (bit - 1) + 1, 2 ** (bit - 1) - 1
        else:
            self.thd_neg, self.thd_pos = -2 ** (bit - 1), 2 ** (bit - 1) - 1
        self.per_channel = per_channel
        self.s = nn.Parameter(torch.ones(1))

    def init_from(self, x, *args, **kwargs):
        if self.per_channel:
            self.s = nn.Parameter(
                x.detach().abs().mean(dim=list(range(1, x.dim())), keepdim=True) * 2 / (self.thd_pos ** 0.5))
        else:
            self.s = nn.Parameter(x.detach().abs().mean() * 2 / (self.thd_pos ** 0.5))

    def forward(self, x):
        s_grad_scale = 1.0 / ((self.thd_pos * x.numel()) ** 0.5)
        s_scale = grad_scale(self.s, s_grad_scale)
        x = x / s_scale
        x = torch.clamp(x, self.thd_neg, self.thd_pos)
        x = round_pass(x)
        x = x * s_scale
        return x


class QuanConv2d(nn.Conv2d):
    def __init__(self, m: nn.Conv2d, quan_w_fn=None, quan_a_fn=None):
        assert type(m) == nn.Conv2d
        super().__init__(m.in_channels, m.out_channels, m.kernel_size, stride=m.stride, padding=m.padding,
                         dilation=m.dilation, groups=m.groups, bias=m.bias is not None,
                         padding_mode=m.padding_mode)
        self.quan_w_fn = quan_w_fn
        self.quan_a_fn = quan_a_fn
        self.weight = nn.Parameter(m.weight.detach())
        self.quan_w_fn.init_from(m.weight)
        if m.bias is not None:
            self.bias = nn.Parameter(m.bias.detach())

    def forward(self, x):
        quantized_weight = self.quan_w_fn(self.weight)
        quantized_act = self.quan_a_fn(x)
        return self._conv_forward(quantized_act, quantized_weight, self.bias)


def replace_module_by_names(model, modules_to_replace):
    def helper(child: nn.Module):
        for n, c in child.named_children():
            if type(c) in (nn.Conv2d,):
                for full_name, m in model.named_modules():
                    if c is m and full_name in modules_to_replace:
                        child.add_module(n, modules_to_replace.pop(full_name))
                        break
            else:
                helper(c)
    helper(model)
    return model


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.features = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                                      nn.MaxPool2d(2),
                                      nn.Conv2d(16, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = self.features(x)
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    x, y = torch.randn(32, 3, 8, 8), torch.randint(0, 10, (32,))
    model = Net()

    # "pretrained" full-precision model
    fp_opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for step in range(3):
        loss = F.cross_entropy(model(x), y)
        fp_opt.zero_grad()
        loss.backward()
        fp_opt.step()
        print(f"fp32 step {step} loss {loss.item():.6f}")

    # quantize every conv except the first one (the fc is a Linear and stays float too)
    excepts = {"conv1"}
    modules_to_replace = {}
    for name, module in model.named_modules():
        if type(module) == nn.Conv2d and name not in excepts:
            modules_to_replace[name] = QuanConv2d(
                module, quan_w_fn=LsqQuan(bit=4, all_positive=False, symmetric=False, per_channel=True),
                quan_a_fn=LsqQuan(bit=4, all_positive=True, symmetric=False, per_channel=False))
    model = replace_module_by_names(model, modules_to_replace)

    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=6)
    model.train()
    for step in range(6):
        outputs = model(x)
        loss = F.cross_entropy(outputs, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        print(f"qat step {step} loss {loss.item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
