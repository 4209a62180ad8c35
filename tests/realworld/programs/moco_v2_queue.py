"""MoCo v2 pretraining, reduced from facebookresearch/moco (moco/builder.py + main_moco.py,
https://github.com/facebookresearch/moco). A query encoder learns with SGD; the key encoder is a
second copy of the same architecture whose weights are copied from the query encoder through
param.data, set to requires_grad=False, and then only moved by the momentum update
(param_k.data = param_k.data * m + param_q.data * (1 - m)) under torch.no_grad. The real
main_moco.py hands model.parameters() -- key encoder included -- to SGD, so the key encoder's
parameters sit in the optimizer without ever getting a gradient (SGD skips them); they still change
every step through the momentum update.

Suspicious-but-correct patterns kept: the negative-key queue is a registered buffer, re-assigned
once after register_buffer (normalised), then dequeued/enqueued in place (self.queue[:, ptr:ptr+bs]
= keys.T, self.queue_ptr[0] = ptr) under @torch.no_grad; keys are computed under torch.no_grad
(with the single-process form of the batch shuffle / unshuffle for BatchNorm); the queue is read
with self.queue.clone().detach(); the logits are scaled in place (logits /= T); top-1/top-5
accuracy is computed under torch.no_grad and the loss is logged with loss.item(); the learning rate
is set by hand through optimizer.param_groups (cosine schedule).
"""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class TinyResNet(nn.Module):
    """Stand-in for torchvision.models.resnet50(num_classes=dim): conv stem, one residual block,
    global average pool, and an fc layer whose output is the feature dimension."""

    def __init__(self, num_classes=16):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, num_classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(x + self.bn2(self.conv2(x)))
        return self.fc(torch.flatten(self.avgpool(x), 1))


# torch.distributed stand-ins for a single process (world size 1, rank 0)
def get_world_size():
    return 1


def get_rank():
    return 0


@torch.no_grad()
def concat_all_gather(tensor):
    """Performs all_gather; with one process the gathered tensor is the tensor itself.
    *** Warning ***: torch.distributed.all_gather has no gradient."""
    tensors_gather = [torch.ones_like(tensor) for _ in range(get_world_size())]
    tensors_gather[get_rank()].copy_(tensor)
    return torch.cat(tensors_gather, dim=0)


class MoCo(nn.Module):
    """Build a MoCo model with: a query encoder, a key encoder, and a queue."""

    def __init__(self, base_encoder, dim=16, K=32, m=0.99, T=0.2, mlp=True):
        super().__init__()
        self.K = K
        self.m = m
        self.T = T
        self.encoder_q = base_encoder(num_classes=dim)
        self.encoder_k = base_encoder(num_classes=dim)
        if mlp:  # hack: brute-force replacement (MoCo v2 MLP head)
            dim_mlp = self.encoder_q.fc.weight.shape[1]
            self.encoder_q.fc = nn.Sequential(nn.Linear(dim_mlp, dim_mlp), nn.ReLU(), self.encoder_q.fc)
            self.encoder_k.fc = nn.Sequential(nn.Linear(dim_mlp, dim_mlp), nn.ReLU(), self.encoder_k.fc)
        for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            param_k.data.copy_(param_q.data)  # initialize
            param_k.requires_grad = False  # not update by gradient

        # create the queue
        self.register_buffer("queue", torch.randn(dim, K))
        self.queue = nn.functional.normalize(self.queue, dim=0)
        self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))

    @torch.no_grad()
    def _momentum_update_key_encoder(self):
        for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            param_k.data = param_k.data * self.m + param_q.data * (1.0 - self.m)

    @torch.no_grad()
    def _dequeue_and_enqueue(self, keys):
        keys = concat_all_gather(keys)
        batch_size = keys.shape[0]
        ptr = int(self.queue_ptr)
        assert self.K % batch_size == 0  # for simplicity
        # replace the keys at ptr (dequeue and enqueue)
        self.queue[:, ptr:ptr + batch_size] = keys.T
        ptr = (ptr + batch_size) % self.K  # move pointer
        self.queue_ptr[0] = ptr

    @torch.no_grad()
    def _batch_shuffle_ddp(self, x):
        """Batch shuffle, for making use of BatchNorm (single-process form)."""
        batch_size_this = x.shape[0]
        x_gather = concat_all_gather(x)
        batch_size_all = x_gather.shape[0]
        num_gpus = batch_size_all // batch_size_this
        idx_shuffle = torch.randperm(batch_size_all)
        idx_unshuffle = torch.argsort(idx_shuffle)
        idx_this = idx_shuffle.view(num_gpus, -1)[get_rank()]
        return x_gather[idx_this], idx_unshuffle

    @torch.no_grad()
    def _batch_unshuffle_ddp(self, x, idx_unshuffle):
        batch_size_this = x.shape[0]
        x_gather = concat_all_gather(x)
        batch_size_all = x_gather.shape[0]
        num_gpus = batch_size_all // batch_size_this
        idx_this = idx_unshuffle.view(num_gpus, -1)[get_rank()]
        return x_gather[idx_this]

    def forward(self, im_q, im_k):
        # compute query features
        q = self.encoder_q(im_q)  # queries: NxC
        q = nn.functional.normalize(q, dim=1)

        # compute key features
        with torch.no_grad():  # no gradient to keys
            self._momentum_update_key_encoder()  # update the key encoder
            im_k, idx_unshuffle = self._batch_shuffle_ddp(im_k)
            k = self.encoder_k(im_k)  # keys: NxC
            k = nn.functional.normalize(k, dim=1)
            k = self._batch_unshuffle_ddp(k, idx_unshuffle)

        # positive logits: Nx1, negative logits: NxK
        l_pos = torch.einsum("nc,nc->n", [q, k]).unsqueeze(-1)
        l_neg = torch.einsum("nc,ck->nk", [q, self.queue.clone().detach()])
        logits = torch.cat([l_pos, l_neg], dim=1)
        logits /= self.T
        labels = torch.zeros(logits.shape[0], dtype=torch.long)

        self._dequeue_and_enqueue(k)
        return logits, labels


def accuracy(output, target, topk=(1,)):
    """Computes the accuracy over the k top predictions (main_moco.py)."""
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


class AverageMeter:
    """Computes and stores the average and current value (main_moco.py)."""

    def __init__(self):
        self.sum, self.count, self.avg = 0.0, 0, 0.0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


def adjust_learning_rate(optimizer, epoch, base_lr, epochs):
    """Decay the learning rate based on schedule (--cos)."""
    lr = base_lr * 0.5 * (1.0 + math.cos(math.pi * epoch / epochs))
    for param_group in optimizer.param_groups:
        param_group["lr"] = lr


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = MoCo(TinyResNet, dim=16, K=32, m=0.99, T=0.2, mlp=True)
    criterion = nn.CrossEntropyLoss()
    base_lr, epochs = 0.03, 10
    optimizer = torch.optim.SGD(model.parameters(), base_lr, momentum=0.9, weight_decay=1e-4)

    losses, top1, top5 = AverageMeter(), AverageMeter(), AverageMeter()
    model.train()
    for step in range(6):
        adjust_learning_rate(optimizer, step, base_lr, epochs)
        x = torch.randn(8, 3, 8, 8)
        images = [x + 0.1 * torch.randn_like(x), torch.flip(x, dims=[3]) + 0.1 * torch.randn_like(x)]
        output, target = model(im_q=images[0], im_k=images[1])
        loss = criterion(output, target)
        acc1, acc5 = accuracy(output, target, topk=(1, 5))
        losses.update(loss.item(), images[0].size(0))
        top1.update(acc1[0], images[0].size(0))
        top5.update(acc5[0], images[0].size(0))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
