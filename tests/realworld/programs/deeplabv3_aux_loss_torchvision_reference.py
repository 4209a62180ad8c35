"""DeepLabV3 (MobileNetV3 backbone) semantic segmentation with an auxiliary FCN head, as trained by the
torchvision segmentation reference: aux loss weighted 0.5, aux head given 10x LR, ignore_index=255 borders,
warmup + PolynomialLR, evaluation under inference_mode with a confusion matrix.

Source: https://github.com/pytorch/vision/tree/main/references/segmentation (train.py: criterion,
params_to_optimize, train_one_epoch, evaluate; utils.py ConfusionMatrix).

Patterns kept (all right):
- `criterion` loops over the model's output dict and returns `losses["out"] + 0.5 * losses["aux"]`; the
  aux head (fed by an intermediate backbone stage) is trained only through that term.
- `params_to_optimize` is built from three filtered lists `[p for p in ... if p.requires_grad]`
  (backbone, classifier, aux_classifier with `lr * 10`); together they cover the whole model.
- Targets have border pixels written in place to 255 and `cross_entropy(..., ignore_index=255)` skips them.
- `evaluate` runs under `torch.inference_mode()` and only reads `output["out"]`; the aux output computed
  there is discarded on purpose. `ConfusionMatrix.update` uses `torch.bincount` on argmax predictions.
- `SequentialLR(LinearLR warmup, PolynomialLR)` steps per iteration; `loss.item()` logs.
"""
import os

import torch
import torch.nn as nn
import torchvision


def criterion(inputs, target):
    losses = {}
    for name, x in inputs.items():
        losses[name] = nn.functional.cross_entropy(x, target, ignore_index=255)
    if len(losses) == 1:
        return losses["out"]
    return losses["out"] + 0.5 * losses["aux"]


class ConfusionMatrix:
    def __init__(self, num_classes):
        self.num_classes = num_classes
        self.mat = None

    def update(self, a, b):
        n = self.num_classes
        if self.mat is None:
            self.mat = torch.zeros((n, n), dtype=torch.int64, device=a.device)
        with torch.inference_mode():
            k = (a >= 0) & (a < n)
            inds = n * a[k].to(torch.int64) + b[k]
            self.mat += torch.bincount(inds, minlength=n**2).reshape(n, n)

    def compute(self):
        h = self.mat.float()
        acc_global = torch.diag(h).sum() / h.sum()
        iu = torch.diag(h) / (h.sum(1) + h.sum(0) - torch.diag(h))
        return acc_global, iu


def evaluate(model, data, num_classes):
    model.eval()
    confmat = ConfusionMatrix(num_classes)
    with torch.inference_mode():
        for image, target in data:
            output = model(image)
            output = output["out"]
            confmat.update(target.flatten(), output.argmax(1).flatten())
    return confmat


def make_sample(batch, num_classes, size=64):
    target = torch.randint(0, num_classes, (batch, size // 16, size // 16))
    target = target.repeat_interleave(16, 1).repeat_interleave(16, 2)
    image = torch.nn.functional.one_hot(target, num_classes).permute(0, 3, 1, 2).float()[:, :3] + 0.3 * torch.randn(batch, 3, size, size)
    target[:, :2, :] = 255  # void border, as in VOC
    target[:, :, :2] = 255
    return image, target


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    num_classes, lr, weight_decay, iters = 4, 0.02, 1e-4, 3
    model = torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(
        weights=None, weights_backbone=None, num_classes=num_classes, aux_loss=True)
    params_to_optimize = [
        {"params": [p for p in model.backbone.parameters() if p.requires_grad]},
        {"params": [p for p in model.classifier.parameters() if p.requires_grad]},
    ]
    params = [p for p in model.aux_classifier.parameters() if p.requires_grad]
    params_to_optimize.append({"params": params, "lr": lr * 10})
    optimizer = torch.optim.SGD(params_to_optimize, lr=lr, momentum=0.9, weight_decay=weight_decay)
    main_lr_scheduler = torch.optim.lr_scheduler.PolynomialLR(optimizer, total_iters=iters - 1, power=0.9)
    warmup_lr_scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.01, total_iters=1)
    lr_scheduler = torch.optim.lr_scheduler.SequentialLR(
        optimizer, schedulers=[warmup_lr_scheduler, main_lr_scheduler], milestones=[1])

    train_data = [make_sample(4, num_classes) for _ in range(iters)]
    val_data = [make_sample(2, num_classes)]
    model.train()
    for it, (image, target) in enumerate(train_data):
        output = model(image)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        lr_scheduler.step()
        print(f"iter {it} loss {loss.item():.4f} lr {optimizer.param_groups[0]['lr']:.5f}")
    confmat = evaluate(model, val_data, num_classes)
    acc_global, iu = confmat.compute()
    print(f"global acc {acc_global.item():.3f} mean IoU {iu.nanmean().item():.3f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
