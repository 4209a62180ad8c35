"""Checkpoint / resume in the middle of a run, reduced from the PyTorch ImageNet example
(pytorch/examples imagenet/main.py, https://github.com/pytorch/examples/blob/main/imagenet/main.py):
train, validate, `save_checkpoint({'epoch', 'arch', 'state_dict', 'best_acc1', 'optimizer',
'scheduler'}, is_best)` each epoch; then a fresh process (here: fresh objects) builds a NEW model,
optimizer and StepLR scheduler, and `--resume` loads them with torch.load + load_state_dict before the
loop continues from checkpoint['epoch']. The checkpoint file is an in-memory io.BytesIO instead of
checkpoint.pth.tar, and the "model_best.pth.tar" copy is a second buffer.

Suspicious-but-correct patterns kept: the parameters that train after the resume were filled by
model.load_state_dict (an in-place copy under no_grad) and belong to a model created after the first
optimizer's last step; the new optimizer's momentum buffers and the scheduler's epoch come from
optimizer.load_state_dict / scheduler.load_state_dict; the first model and optimizer are simply
abandoned; validation runs under torch.no_grad() in eval mode; accuracy computed from output.topk and
logged with .item(); best_acc1 kept as a tensor-free float.
"""
import io
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class SmallResNet(nn.Module):
    def __init__(self, num_classes=5):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, num_classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(x + self.bn2(self.conv2(x)))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


def accuracy(output, target, topk=(1,)):
    """Computes the accuracy over the k top predictions for the specified values of k"""
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)
        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))
        res = []
        for k in topk:
            correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res


def train(batch, model, criterion, optimizer, step):
    model.train()
    images, target = batch
    output = model(images)
    loss = criterion(output, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.6f}")


def validate(batch, model, criterion):
    model.eval()
    with torch.no_grad():
        images, target = batch
        output = model(images)
        acc1, = accuracy(output, target, topk=(1,))
    return acc1.item()


def save_checkpoint(state, is_best, files):
    files["checkpoint.pth.tar"] = io.BytesIO()
    torch.save(state, files["checkpoint.pth.tar"])
    if is_best:
        files["model_best.pth.tar"] = io.BytesIO(files["checkpoint.pth.tar"].getvalue())


def build():
    model = SmallResNet()
    optimizer = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.1)
    return model, optimizer, scheduler


def run_epochs(start_epoch, epochs, model, optimizer, scheduler, data, best_acc1, files):
    criterion = nn.CrossEntropyLoss()
    for epoch in range(start_epoch, epochs):
        train(data[epoch % 2], model, criterion, optimizer, epoch)
        acc1 = validate(data[2], model, criterion)
        scheduler.step()
        is_best = acc1 > best_acc1
        best_acc1 = max(acc1, best_acc1)
        save_checkpoint({
            "epoch": epoch + 1,
            "arch": "small_resnet",
            "state_dict": model.state_dict(),
            "best_acc1": best_acc1,
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
        }, is_best, files)
    return best_acc1


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    data = [(torch.randn(8, 3, 8, 8), torch.randint(0, 5, (8,))) for _ in range(3)]
    files = {}

    # first run: killed after 4 epochs
    model, optimizer, scheduler = build()
    run_epochs(0, 4, model, optimizer, scheduler, data, 0.0, files)
    first_model = model

    # second run with --resume checkpoint.pth.tar: new model, optimizer and scheduler
    model, optimizer, scheduler = build()
    files["checkpoint.pth.tar"].seek(0)
    checkpoint = torch.load(files["checkpoint.pth.tar"], map_location="cpu")
    start_epoch = checkpoint["epoch"]
    best_acc1 = checkpoint["best_acc1"]
    model.load_state_dict(checkpoint["state_dict"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    print(f"=> loaded checkpoint (epoch {checkpoint['epoch']}) lr {scheduler.get_last_lr()[0]:.4f}")
    best_acc1 = run_epochs(start_epoch, 8, model, optimizer, scheduler, data, best_acc1, files)
    print(f"best acc1 {best_acc1:.2f}")

    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict(), "first_run_model": first_model.state_dict()},
                   os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
