# powerful-benchmarker -- "ProxyNCA Loss optimizer step location"
# https://github.com/KevinMusgrave/powerful-benchmarker/issues/70
# (replacement for the Proxy-Anchor-CVPR2020 ProxyNCA report, which is already
#  in the corpus; same bug: the ProxyNCA proxies live in the loss function and
#  no optimizer is ever built for them.)
# ProxyNCALoss keeps its proxies as an nn.Parameter on the loss module. The
# default optimizers config (config_optimizers/default.yaml) only has
# trunk_optimizer and embedder_optimizer, so the trainer never builds an
# optimizer for loss_funcs["metric_loss"]: the proxies get a gradient every
# iteration but stay at their random initialisation.
# Fix (maintainer's answer): add a metric_loss_optimizer to the optimizers
# config, e.g. {metric_loss_optimizer: {Adam: {lr: 0.01}}}.
import re

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


# ---- pytorch_metric_learning.losses.ProxyNCALoss (trimmed) ----
class ProxyNCALoss(nn.Module):
    def __init__(self, num_classes, embedding_size, softmax_scale=1):
        super().__init__()
        self.softmax_scale = softmax_scale
        self.proxies = nn.Parameter(torch.Tensor(num_classes, embedding_size))
        nn.init.xavier_normal_(self.proxies)
        self.proxy_labels = torch.arange(num_classes)

    def forward(self, embeddings, labels):
        embeddings = F.normalize(embeddings, p=2, dim=1)
        prox = F.normalize(self.proxies, p=2, dim=1)
        min_dist = torch.cdist(embeddings, prox) ** 2
        same = (labels.unsqueeze(1) == self.proxy_labels.unsqueeze(0)).float()
        exp = torch.nn.functional.softmax(-min_dist * self.softmax_scale, dim=1)
        exp = torch.sum(exp * same, dim=1)
        return torch.mean(-torch.log(exp + 1e-20))


# ---- powerful_benchmarker/api_parsers: build optimizers from the config ----
def get_optimizers(models, loss_funcs, config_optimizers):
    optimizers = {}
    for k, spec in config_optimizers.items():
        base = re.sub("_optimizer$", "", k)
        obj = models[base] if base in models else loss_funcs[base]
        (opt_name, kwargs), = spec.items()
        optimizers[k] = getattr(torch.optim, opt_name)(obj.parameters(), **kwargs)
    return optimizers


# ---- pytorch_metric_learning.trainers.MetricLossOnly (trimmed BaseTrainer) ----
class MetricLossOnly:
    def __init__(self, models, optimizers, loss_funcs, dataset, freeze_these=()):
        self.models = models
        self.optimizers = optimizers
        self.loss_funcs = loss_funcs
        self.dataset = dataset
        self.freeze_these = freeze_these
        self.losses = {"metric_loss": 0, "total_loss": 0}

    def zero_grad(self):
        for v in self.models.values():
            v.zero_grad()
        for v in self.optimizers.values():
            v.zero_grad()

    def compute_embeddings(self, data):
        return self.models["embedder"](self.models["trunk"](data))

    def calculate_loss(self, curr_batch):
        data, labels = curr_batch
        embeddings = self.compute_embeddings(data)
        self.losses["metric_loss"] = self.loss_funcs["metric_loss"](embeddings, labels)
        self.losses["total_loss"] = self.losses["metric_loss"]

    def backward(self):
        self.losses["total_loss"].backward()

    def step_optimizers(self):
        for k, v in self.optimizers.items():
            if re.sub("_optimizer$", "", k) not in self.freeze_these:
                v.step()

    def forward_and_backward(self, curr_batch):
        self.zero_grad()
        self.calculate_loss(curr_batch)
        self.backward()
        self.step_optimizers()

    def train(self, num_epochs=1):
        for epoch in range(1, num_epochs + 1):
            for curr_batch in self.dataset:
                self.forward_and_backward(curr_batch)
            print("epoch %d total_loss=%.5f" % (epoch, self.losses["total_loss"].item()))


def main():
    num_classes, embedding_size = 8, 16
    models = {"trunk": nn.Sequential(nn.Linear(32, 64), nn.ReLU()),
              "embedder": nn.Linear(64, embedding_size)}
    loss_funcs = {"metric_loss": ProxyNCALoss(num_classes, embedding_size)}
    config_optimizers = {"trunk_optimizer": {"RMSprop": {"lr": 1e-3, "weight_decay": 1e-4, "momentum": 0.9}}, "embedder_optimizer": {"RMSprop": {"lr": 1e-3, "weight_decay": 1e-4, "momentum": 0.9}}, "metric_loss_optimizer": {"Adam": {"lr": 0.01}}}
    optimizers = get_optimizers(models, loss_funcs, config_optimizers)
    dataset = [(torch.randn(16, 32), torch.randint(0, num_classes, (16,))) for _ in range(4)]

    proxies = loss_funcs["metric_loss"].proxies
    proxies0 = proxies.detach().clone()
    trainer = MetricLossOnly(models, optimizers, loss_funcs, dataset)
    trainer.train(num_epochs=3)

    print("proxies.grad norm:", proxies.grad.norm().item())
    print("proxies changed:", not torch.equal(proxies0, proxies.detach()))


if __name__ == "__main__":
    main()
