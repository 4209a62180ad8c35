"""FixMatch: weak/strong augmentation consistency with confidence-thresholded pseudo-labels, interleaved
batches for BatchNorm, name-based weight-decay exclusion, cosine LambdaLR and a state_dict-based EMA model.

Source: https://github.com/kekmodel/FixMatch-pytorch (train.py, models/ema.py), the most used PyTorch
reimplementation of Sohn et al. 2020.

Patterns kept (all right):
- `pseudo_label = torch.softmax(logits_u_w.detach() / T, dim=-1)`: the weak view only produces targets; the
  model learns through the strong view and the labelled batch, which share the same forward.
- `max_probs, targets_u = torch.max(pseudo_label, dim=-1)` and `mask = max_probs.ge(threshold).float()`:
  argmax labels and a 0/1 mask are constants by design.
- `interleave` / `de_interleave` reshape and transpose the concatenated batch so every BatchNorm batch mixes
  labelled and unlabelled samples; they are pure views, the gradient flows back through them.
- Strong augmentation writes Cutout patches in place into the input images, which are data, not parameters.
- Weight decay is disabled by name for `bias` and `bn` parameters, both groups are given to SGD.
- `ModelEMA` deep-copies the model, freezes the copy with `requires_grad_(False)` and updates it under
  `torch.no_grad()` from `model.state_dict()` values (`.detach()`), with `copy_` for buffers: the EMA
  model is evaluated, never trained.
- `model.zero_grad()` after `optimizer.step()` (the repo's order) is equivalent to zeroing before backward.
"""
import math
import os
from copy import deepcopy

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import LambdaLR


class SmallWRN(nn.Module):
    def __init__(self, num_classes=4, width=8):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width, momentum=0.001)
        self.conv2 = nn.Conv2d(width, 2 * width, 3, stride=2, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(2 * width, momentum=0.001)
        self.fc = nn.Linear(2 * width, num_classes)

    def forward(self, x):
        x = F.leaky_relu(self.bn1(self.conv1(x)), 0.1)
        x = F.leaky_relu(self.bn2(self.conv2(x)), 0.1)
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


class ModelEMA(object):
    def __init__(self, model, decay):
        self.ema = deepcopy(model)
        self.ema.eval()
        self.decay = decay
        self.param_keys = [k for k, _ in self.ema.named_parameters()]
        self.buffer_keys = [k for k, _ in self.ema.named_buffers()]
        for p in self.ema.parameters():
            p.requires_grad_(False)

    def update(self, model):
        with torch.no_grad():
            msd = model.state_dict()
            esd = self.ema.state_dict()
            for k in self.param_keys:
                model_v = msd[k].detach()
                ema_v = esd[k]
                esd[k].copy_(ema_v * self.decay + (1.0 - self.decay) * model_v)
            for k in self.buffer_keys:
                esd[k].copy_(msd[k])


def interleave(x, size):
    s = list(x.shape)
    return x.reshape([-1, size] + s[1:]).transpose(0, 1).reshape([-1] + s[1:])


def de_interleave(x, size):
    s = list(x.shape)
    return x.reshape([size, -1] + s[1:]).transpose(0, 1).reshape([-1] + s[1:])


def get_cosine_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps, num_cycles=7.0 / 16.0):
    def _lr_lambda(current_step):
        if current_step < num_warmup_steps:
            return float(current_step) / float(max(1, num_warmup_steps))
        progress = float(current_step - num_warmup_steps) / float(max(1, num_training_steps - num_warmup_steps))
        return max(0.0, math.cos(math.pi * num_cycles * progress))
    return LambdaLR(optimizer, _lr_lambda)


def weak_aug(x):
    flip = torch.rand(x.size(0)) < 0.5
    x = torch.where(flip[:, None, None, None], x.flip(3), x)
    return torch.roll(x, shifts=(int(torch.randint(-1, 2, ())), int(torch.randint(-1, 2, ()))), dims=(2, 3))


def strong_aug(x):
    x = weak_aug(x) + 0.3 * torch.randn_like(x)
    for i in range(x.size(0)):  # Cutout, written in place into the augmented image
        cy, cx = torch.randint(0, x.size(2) - 3, (2,)).tolist()
        x[i, :, cy:cy + 3, cx:cx + 3] = 0.5
    return x


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    batch_size, mu, T, lambda_u, steps = 8, 2, 1.0, 1.0, 8
    threshold = 0.3  # 0.95 in the paper; lowered so a tiny, untrained model produces some confident labels
    protos = torch.randn(4, 3, 8, 8)
    labels_x = torch.randint(0, 4, (batch_size * steps,))
    images_x = protos[labels_x] + 0.5 * torch.randn(batch_size * steps, 3, 8, 8)
    images_u = protos[torch.randint(0, 4, (batch_size * mu * steps,))] + 0.5 * torch.randn(batch_size * mu * steps, 3, 8, 8)

    model = SmallWRN()
    no_decay = ["bias", "bn"]
    grouped_parameters = [
        {"params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)], "weight_decay": 5e-4},
        {"params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.SGD(grouped_parameters, lr=0.03, momentum=0.9, nesterov=True)
    scheduler = get_cosine_schedule_with_warmup(optimizer, 0, steps)
    ema_model = ModelEMA(model, 0.999)

    model.train()
    for step in range(steps):
        inputs_x = weak_aug(images_x[step * batch_size:(step + 1) * batch_size])
        targets_x = labels_x[step * batch_size:(step + 1) * batch_size]
        raw_u = images_u[step * batch_size * mu:(step + 1) * batch_size * mu]
        inputs_u_w, inputs_u_s = weak_aug(raw_u), strong_aug(raw_u)
        inputs = interleave(torch.cat((inputs_x, inputs_u_w, inputs_u_s)), 2 * mu + 1)
        logits = model(inputs)
        logits = de_interleave(logits, 2 * mu + 1)
        logits_x = logits[:batch_size]
        logits_u_w, logits_u_s = logits[batch_size:].chunk(2)
        del logits
        Lx = F.cross_entropy(logits_x, targets_x, reduction="mean")
        pseudo_label = torch.softmax(logits_u_w.detach() / T, dim=-1)
        max_probs, targets_u = torch.max(pseudo_label, dim=-1)
        mask = max_probs.ge(threshold).float()
        Lu = (F.cross_entropy(logits_u_s, targets_u, reduction="none") * mask).mean()
        loss = Lx + lambda_u * Lu
        loss.backward()
        optimizer.step()
        scheduler.step()
        ema_model.update(model)
        model.zero_grad()
        print(f"step {step} loss {loss.item():.4f} Lx {Lx.item():.4f} Lu {Lu.item():.4f} mask {mask.mean().item():.2f}")

    with torch.no_grad():
        test_model = ema_model.ema
        acc = (test_model(images_x).argmax(1) == labels_x).float().mean()
    print(f"ema train-set acc {acc.item():.3f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict(), "ema": ema_model.ema.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
