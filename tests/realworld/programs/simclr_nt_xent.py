"""SimCLR with the InfoNCE / NT-Xent loss, reduced from sthalles/SimCLR (run.py, simclr.py
SimCLR.info_nce_loss / SimCLR.train, models/resnet_simclr.py, utils.accuracy;
https://github.com/sthalles/SimCLR). A ResNet whose fc is replaced by an MLP projection head
(nn.Sequential(Linear, ReLU, old fc)) learns with Adam; both augmented views go through the network
in one concatenated batch.

Suspicious-but-correct patterns kept: the positive/negative masks are built from a float label
matrix compared to itself and a boolean eye mask, and the similarity matrix is gathered with boolean
indexing ([~mask], [labels.bool()]) into new logits, with all-zero class targets; AMP autocast and
GradScaler are present but disabled (fp16_precision False), so scaler.scale(loss).backward() and
scaler.step(optimizer) are the plain backward/step; top-1/top-5 accuracy runs under torch.no_grad
with an in-place mul_ on its counts; the loss tensor is handed to a TensorBoard-like writer that
stores it as a Python float; the cosine LR scheduler is only stepped after 10 warmup epochs, so it
never steps in this short run; the final checkpoint stores model and optimizer state_dicts.
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class SummaryWriter:
    """Stand-in for torch.utils.tensorboard.SummaryWriter: add_scalar converts tensors to floats."""

    def __init__(self):
        self.scalars = []

    def add_scalar(self, tag, value, global_step=None):
        self.scalars.append((tag, value.item() if torch.is_tensor(value) else float(value), global_step))


class TinyResNet(nn.Module):
    """Stand-in for torchvision.models.resnet18(pretrained=False, num_classes=out_dim)."""

    def __init__(self, num_classes=16):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(16, num_classes)

    def forward(self, x):
        x = self.avgpool(F.relu(self.bn1(self.conv1(x))))
        return self.fc(torch.flatten(x, 1))


class ResNetSimCLR(nn.Module):
    def __init__(self, out_dim):
        super().__init__()
        self.backbone = TinyResNet(num_classes=out_dim)
        dim_mlp = self.backbone.fc.in_features
        # add mlp projection head
        self.backbone.fc = nn.Sequential(nn.Linear(dim_mlp, dim_mlp), nn.ReLU(), self.backbone.fc)

    def forward(self, x):
        return self.backbone(x)


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


class SimCLR(object):
    def __init__(self, model, optimizer, scheduler, batch_size, n_views=2, temperature=0.07, epochs=2,
                 log_every_n_steps=2, fp16_precision=False, device="cpu"):
        self.model = model.to(device)
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.batch_size, self.n_views, self.temperature = batch_size, n_views, temperature
        self.epochs, self.log_every_n_steps, self.fp16_precision = epochs, log_every_n_steps, fp16_precision
        self.device = device
        self.writer = SummaryWriter()
        self.criterion = torch.nn.CrossEntropyLoss().to(device)

    def info_nce_loss(self, features):
        labels = torch.cat([torch.arange(self.batch_size) for i in range(self.n_views)], dim=0)
        labels = (labels.unsqueeze(0) == labels.unsqueeze(1)).float()
        labels = labels.to(self.device)

        features = F.normalize(features, dim=1)
        similarity_matrix = torch.matmul(features, features.T)

        # discard the main diagonal from both: labels and similarities matrix
        mask = torch.eye(labels.shape[0], dtype=torch.bool).to(self.device)
        labels = labels[~mask].view(labels.shape[0], -1)
        similarity_matrix = similarity_matrix[~mask].view(similarity_matrix.shape[0], -1)

        # select and combine multiple positives
        positives = similarity_matrix[labels.bool()].view(labels.shape[0], -1)
        # select only the negatives the negatives
        negatives = similarity_matrix[~labels.bool()].view(similarity_matrix.shape[0], -1)

        logits = torch.cat([positives, negatives], dim=1)
        labels = torch.zeros(logits.shape[0], dtype=torch.long).to(self.device)
        logits = logits / self.temperature
        return logits, labels

    def train(self, train_loader):
        scaler = torch.amp.GradScaler("cuda", enabled=self.fp16_precision)
        n_iter = 0
        for epoch_counter in range(self.epochs):
            for images, _ in train_loader:
                images = torch.cat(images, dim=0)
                images = images.to(self.device)

                with torch.autocast(device_type="cuda", enabled=self.fp16_precision):
                    features = self.model(images)
                    logits, labels = self.info_nce_loss(features)
                    loss = self.criterion(logits, labels)

                self.optimizer.zero_grad()
                scaler.scale(loss).backward()
                scaler.step(self.optimizer)
                scaler.update()

                if n_iter % self.log_every_n_steps == 0:
                    top1, top5 = accuracy(logits, labels, topk=(1, 5))
                    self.writer.add_scalar("loss", loss, global_step=n_iter)
                    self.writer.add_scalar("acc/top1", top1[0], global_step=n_iter)
                    self.writer.add_scalar("acc/top5", top5[0], global_step=n_iter)
                    self.writer.add_scalar("learning_rate", self.scheduler.get_last_lr()[0], global_step=n_iter)
                print(f"step {n_iter} loss {loss.item():.6f}")
                n_iter += 1

            # warmup for the first 10 epochs
            if epoch_counter >= 10:
                self.scheduler.step()
        return {"epoch": self.epochs, "state_dict": self.model.state_dict(),
                "optimizer": self.optimizer.state_dict()}


def make_loader(num_batches, batch_size):
    """Stand-in for a DataLoader over ContrastiveLearningViewGenerator: each item yields n_views=2
    augmented views of the same images."""
    batches = []
    for _ in range(num_batches):
        x = torch.rand(batch_size, 3, 8, 8)
        view1 = x + 0.1 * torch.randn_like(x)
        view2 = torch.flip(x, dims=[3]) * (0.8 + 0.4 * torch.rand(batch_size, 1, 1, 1))
        batches.append(([view1, view2], torch.zeros(batch_size, dtype=torch.long)))
    return batches


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    batch_size = 8
    train_loader = make_loader(3, batch_size)
    model = ResNetSimCLR(out_dim=16)
    optimizer = torch.optim.Adam(model.parameters(), 3e-3, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=len(train_loader), eta_min=0,
                                                           last_epoch=-1)
    simclr = SimCLR(model=model, optimizer=optimizer, scheduler=scheduler, batch_size=batch_size, epochs=2)
    checkpoint = simclr.train(train_loader)
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
