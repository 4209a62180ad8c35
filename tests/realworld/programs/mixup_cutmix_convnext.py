"""Mixup / CutMix with soft targets, reduced from torchvision's classification reference recipe
(https://github.com/pytorch/vision/blob/main/references/classification/train.py and transforms.py: RandomMixup,
RandomCutmix applied in the DataLoader's collate_fn; utils.py: set_weight_decay, accuracy) as used for the ConvNeXt
recipe (--mixup-alpha 0.8 --cutmix-alpha 1.0 --label-smoothing 0.1 --norm-weight-decay 0.0, AdamW, linear warmup then
cosine), with a tiny torchvision-style ConvNeXt (torchvision/models/convnext.py: CNBlock with a `layer_scale`
Parameter, LayerNorm2d, row-mode stochastic depth) written in the file. Tiny random "images", 4 classes.

Suspicious-but-correct patterns kept:
  - the targets are turned into one-hot float tensors and mixed in place (`target.mul_(lam).add_(target_rolled)`)
    inside the collate_fn; the CutMix branch overwrites a box of the batch in place
    (`batch[:, :, y1:y2, x1:x2] = batch_rolled[...]`); lambda is drawn with `torch._sample_dirichlet` and turned into
    a Python float; none of this touches the model, and the soft targets go straight into
    `nn.CrossEntropyLoss(label_smoothing=0.1)` (probability targets);
  - `layer_scale` is a bare nn.Parameter (ones * 1e-6) multiplying the block's branch, so every parameter inside the
    residual branch starts with a tiny (but nonzero) gradient;
  - stochastic depth drops whole samples of the residual branch with a Bernoulli mask (row mode), in train mode only;
  - norm parameters go to a separate param group with weight_decay 0.0 (set_weight_decay, norm_weight_decay=0.0);
  - accuracy computed under `torch.inference_mode()` from the soft targets (`target.max(dim=1)[1]`);
  - LR warmup (LinearLR) chained with CosineAnnealingLR in a SequentialLR stepped per epoch; clip_grad_norm_;
    the loss logged with `.item()`; evaluation under `torch.inference_mode()`.
"""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.dataloader import default_collate


# ---- references/classification/transforms.py (stand-in) ----
class RandomMixup(nn.Module):
    def __init__(self, num_classes, p=0.5, alpha=1.0, inplace=False):
        super().__init__()
        self.num_classes = num_classes
        self.p = p
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, batch, target):
        if not self.inplace:
            batch = batch.clone()
            target = target.clone()
        if target.ndim == 1:
            target = F.one_hot(target, num_classes=self.num_classes).to(dtype=batch.dtype)
        if torch.rand(1).item() >= self.p:
            return batch, target
        # It's faster to roll the batch by one instead of shuffling it to create image pairs
        batch_rolled = batch.roll(1, 0)
        target_rolled = target.roll(1, 0)
        lambda_param = float(torch._sample_dirichlet(torch.tensor([self.alpha, self.alpha]))[0])
        batch_rolled.mul_(1.0 - lambda_param)
        batch.mul_(lambda_param).add_(batch_rolled)
        target_rolled.mul_(1.0 - lambda_param)
        target.mul_(lambda_param).add_(target_rolled)
        return batch, target


class RandomCutmix(nn.Module):
    def __init__(self, num_classes, p=0.5, alpha=1.0, inplace=False):
        super().__init__()
        self.num_classes = num_classes
        self.p = p
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, batch, target):
        if not self.inplace:
            batch = batch.clone()
            target = target.clone()
        if target.ndim == 1:
            target = F.one_hot(target, num_classes=self.num_classes).to(dtype=batch.dtype)
        if torch.rand(1).item() >= self.p:
            return batch, target
        batch_rolled = batch.roll(1, 0)
        target_rolled = target.roll(1, 0)
        lambda_param = float(torch._sample_dirichlet(torch.tensor([self.alpha, self.alpha]))[0])
        H, W = batch.shape[-2:]
        r_x = torch.randint(W, (1,))
        r_y = torch.randint(H, (1,))
        r = 0.5 * math.sqrt(1.0 - lambda_param)
        r_w_half = int(r * W)
        r_h_half = int(r * H)
        x1 = int(torch.clamp(r_x - r_w_half, min=0))
        y1 = int(torch.clamp(r_y - r_h_half, min=0))
        x2 = int(torch.clamp(r_x + r_w_half, max=W))
        y2 = int(torch.clamp(r_y + r_h_half, max=H))
        batch[:, :, y1:y2, x1:x2] = batch_rolled[:, :, y1:y2, x1:x2]
        lambda_param = float(1.0 - (x2 - x1) * (y2 - y1) / (W * H))
        target_rolled.mul_(1.0 - lambda_param)
        target.mul_(lambda_param).add_(target_rolled)
        return batch, target


class RandomChoice:
    """torchvision.transforms.RandomChoice stand-in (applies one of the transforms)."""

    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, *args):
        t = self.transforms[int(torch.randint(len(self.transforms), (1,)))]
        return t(*args)


# ---- torchvision/models/convnext.py + torchvision/ops/stochastic_depth.py (stand-in) ----
def stochastic_depth(input, p, mode, training=True):
    if not training or p == 0.0:
        return input
    survival_rate = 1.0 - p
    size = [input.shape[0]] + [1] * (input.ndim - 1) if mode == "row" else [1] * input.ndim
    noise = torch.empty(size, dtype=input.dtype, device=input.device)
    noise = noise.bernoulli_(survival_rate)
    if survival_rate > 0.0:
        noise.div_(survival_rate)
    return input * noise


class StochasticDepth(nn.Module):
    def __init__(self, p, mode):
        super().__init__()
        self.p = p
        self.mode = mode

    def forward(self, input):
        return stochastic_depth(input, self.p, self.mode, self.training)


class LayerNorm2d(nn.LayerNorm):
    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class Permute(nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.dims = dims

    def forward(self, x):
        return torch.permute(x, self.dims)


class CNBlock(nn.Module):
    def __init__(self, dim, layer_scale, stochastic_depth_prob):
        super().__init__()
        self.block = nn.Sequential(
            nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim, bias=True),
            Permute([0, 2, 3, 1]),
            nn.LayerNorm(dim, eps=1e-6),
            nn.Linear(dim, 4 * dim, bias=True),
            nn.GELU(),
            nn.Linear(4 * dim, dim, bias=True),
            Permute([0, 3, 1, 2]),
        )
        self.layer_scale = nn.Parameter(torch.ones(dim, 1, 1) * layer_scale)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")

    def forward(self, input):
        result = self.layer_scale * self.block(input)
        result = self.stochastic_depth(result)
        result += input
        return result


class ConvNeXt(nn.Module):
    def __init__(self, dims=(16, 32), depths=(1, 1), num_classes=4, layer_scale=1e-6, stochastic_depth_prob=0.1):
        super().__init__()
        layers = [nn.Sequential(nn.Conv2d(3, dims[0], kernel_size=4, stride=4), LayerNorm2d(dims[0], eps=1e-6))]
        total_blocks = sum(depths)
        block_id = 0
        for i, (dim, depth) in enumerate(zip(dims, depths)):
            stage = []
            for _ in range(depth):
                sd_prob = stochastic_depth_prob * block_id / (total_blocks - 1.0)
                stage.append(CNBlock(dim, layer_scale, sd_prob))
                block_id += 1
            layers.append(nn.Sequential(*stage))
            if i + 1 < len(dims):
                layers.append(nn.Sequential(LayerNorm2d(dim, eps=1e-6),
                                            nn.Conv2d(dim, dims[i + 1], kernel_size=2, stride=2)))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(LayerNorm2d(dims[-1], eps=1e-6), nn.Flatten(1),
                                        nn.Linear(dims[-1], num_classes))
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.features(x)
        x = self.avgpool(x)
        return self.classifier(x)


# ---- references/classification/utils.py (stand-in) ----
def set_weight_decay(model, weight_decay, norm_weight_decay=None, norm_classes=None):
    if not norm_classes:
        norm_classes = [nn.modules.batchnorm._BatchNorm, nn.LayerNorm, nn.GroupNorm,
                        nn.modules.instancenorm._InstanceNorm, nn.LocalResponseNorm]
    norm_classes = tuple(norm_classes)
    params = {"other": [], "norm": []}
    params_weight_decay = {"other": weight_decay, "norm": norm_weight_decay}

    def _add_params(module, prefix=""):
        for name, p in module.named_parameters(recurse=False):
            if not p.requires_grad:
                continue
            if norm_weight_decay is not None and isinstance(module, norm_classes):
                params["norm"].append(p)
            else:
                params["other"].append(p)
        for child_name, child_module in module.named_children():
            child_prefix = f"{prefix}.{child_name}" if prefix != "" else child_name
            _add_params(child_module, prefix=child_prefix)

    _add_params(model)
    param_groups = []
    for key in params:
        if len(params[key]) > 0:
            param_groups.append({"params": params[key], "weight_decay": params_weight_decay[key]})
    return param_groups


def accuracy(output, target, topk=(1,)):
    with torch.inference_mode():
        maxk = max(topk)
        batch_size = target.size(0)
        if target.ndim == 2:
            target = target.max(dim=1)[1]
        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target[None])
        res = []
        for k in topk:
            correct_k = correct[:k].flatten().sum(dtype=torch.float32)
            res.append(correct_k * (100.0 / batch_size))
        return res


def train_one_epoch(model, criterion, optimizer, data_loader, epoch, step, clip_grad_norm=1.0):
    model.train()
    for i, (image, target) in enumerate(data_loader):
        output = model(image)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        if clip_grad_norm is not None:
            nn.utils.clip_grad_norm_(model.parameters(), clip_grad_norm)
        optimizer.step()
        acc1, acc2 = accuracy(output, target, topk=(1, 2))
        print(f"step {step} loss {loss.item():.6f}")
        step += 1
    return step


def evaluate(model, criterion, images, labels):
    model.eval()
    with torch.inference_mode():
        output = model(images)
        loss = criterion(output, labels)
        acc1, = accuracy(output, labels, topk=(1,))
    return loss.item(), acc1.item()


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    num_classes = 4
    prototypes = torch.randn(num_classes, 3, 16, 16)
    labels = torch.randint(0, num_classes, (32,))
    images = prototypes[labels] + 0.5 * torch.randn(32, 3, 16, 16)
    val_labels = torch.randint(0, num_classes, (8,))
    val_images = prototypes[val_labels] + 0.5 * torch.randn(8, 3, 16, 16)

    mixup_transforms = [RandomMixup(num_classes, p=1.0, alpha=0.8), RandomCutmix(num_classes, p=1.0, alpha=1.0)]
    mixupcutmix = RandomChoice(mixup_transforms)

    def collate_fn(batch):
        return mixupcutmix(*default_collate(batch))

    data_loader = DataLoader(TensorDataset(images, labels), batch_size=8, shuffle=True, collate_fn=collate_fn)

    model = ConvNeXt(num_classes=num_classes)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    parameters = set_weight_decay(model, 0.05, norm_weight_decay=0.0)
    optimizer = torch.optim.AdamW(parameters, lr=2e-3, weight_decay=0.05)
    epochs, warmup_epochs = 2, 1
    main_lr_scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs - warmup_epochs,
                                                                   eta_min=0.0)
    warmup_lr_scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1, total_iters=warmup_epochs)
    lr_scheduler = torch.optim.lr_scheduler.SequentialLR(
        optimizer, schedulers=[warmup_lr_scheduler, main_lr_scheduler], milestones=[warmup_epochs])

    step = 0
    for epoch in range(epochs):
        step = train_one_epoch(model, criterion, optimizer, data_loader, epoch, step)
        lr_scheduler.step()
        val_loss, val_acc = evaluate(model, criterion, val_images, val_labels)
        print(f"epoch {epoch} val loss {val_loss:.4f} acc {val_acc:.1f}")

    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
