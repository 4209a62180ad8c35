"""SwAV (swapped assignments between multi-crop views), reduced from facebookresearch/swav
(main_swav.py train() and distributed_sinkhorn, src/resnet50.py forward/forward_head;
https://github.com/facebookresearch/swav). One network (backbone + projection head + a bias-free
nn.Linear of prototypes) is trained with SGD wrapped in apex's LARC.

Suspicious-but-correct patterns kept: at the start of every iteration the prototypes are
L2-normalised in place under torch.no_grad (w = prototypes.weight.data.clone(); normalize;
prototypes.weight.copy_(w)); the embedding is .detach()ed and written into a feature queue (a plain
tensor, created at epoch_queue_starts, shifted in place with queue[i, bs:] = queue[i, :-bs].clone())
that is only used once its last row is non-zero; the codes q come from Sinkhorn-Knopp run under
torch.no_grad with in-place divisions (Q /= sum_Q, Q *= ...), so only the swapped prediction
log-softmax carries gradient; during the first freeze_prototypes_niters iterations the prototypes'
p.grad is set to None after backward (they learn from iteration 2 on here); the LARC stand-in rewrites
p.grad.data in place (weight decay folded in, trust-ratio scaling) under torch.no_grad and zeroes the
inner SGD's weight_decay around its step; lr is written into param_groups from a warmup + cosine
schedule (0 at the first iteration); the loss is logged with loss.item().
"""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class LARC(object):
    """Stand-in for apex.parallel.LARC (layer-wise adaptive rate clipping/scaling) wrapping an optimizer."""

    def __init__(self, optimizer, trust_coefficient=0.02, clip=True, eps=1e-8):
        self.optim = optimizer
        self.trust_coefficient = trust_coefficient
        self.eps = eps
        self.clip = clip

    @property
    def param_groups(self):
        return self.optim.param_groups

    def state_dict(self):
        return self.optim.state_dict()

    def zero_grad(self):
        self.optim.zero_grad()

    def step(self):
        with torch.no_grad():
            weight_decays = []
            for group in self.optim.param_groups:
                # absorb weight decay control from optimizer
                weight_decay = group["weight_decay"] if "weight_decay" in group else 0
                weight_decays.append(weight_decay)
                group["weight_decay"] = 0
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    param_norm = torch.norm(p.data)
                    grad_norm = torch.norm(p.grad.data)
                    if param_norm != 0 and grad_norm != 0:
                        # calculate adaptive lr + weight decay
                        adaptive_lr = self.trust_coefficient * param_norm / (
                            grad_norm + param_norm * weight_decay + self.eps)
                        if self.clip:
                            adaptive_lr = min(adaptive_lr / group["lr"], 1)
                        p.grad.data += weight_decay * p.data
                        p.grad.data *= adaptive_lr
        self.optim.step()
        # return weight decay control to optimizer
        for i, group in enumerate(self.optim.param_groups):
            group["weight_decay"] = weight_decays[i]


class ResNet(nn.Module):
    """Stand-in for src/resnet50.py: tiny conv backbone, projection head, l2norm, prototypes."""

    def __init__(self, output_dim=8, hidden_mlp=16, nmb_prototypes=10, normalize=True):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu = nn.ReLU(inplace=True)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.l2norm = normalize
        self.projection_head = nn.Sequential(
            nn.Linear(16, hidden_mlp), nn.BatchNorm1d(hidden_mlp), nn.ReLU(inplace=True),
            nn.Linear(hidden_mlp, output_dim))
        self.prototypes = nn.Linear(output_dim, nmb_prototypes, bias=False)

    def forward_backbone(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.avgpool(x)
        return torch.flatten(x, 1)

    def forward_head(self, x):
        if self.projection_head is not None:
            x = self.projection_head(x)
        if self.l2norm:
            x = nn.functional.normalize(x, dim=1, p=2)
        if self.prototypes is not None:
            return x, self.prototypes(x)
        return x

    def forward(self, inputs):
        if not isinstance(inputs, list):
            inputs = [inputs]
        idx_crops = torch.cumsum(torch.unique_consecutive(
            torch.tensor([inp.shape[-1] for inp in inputs]), return_counts=True)[1], 0)
        start_idx = 0
        for end_idx in idx_crops:
            _out = self.forward_backbone(torch.cat(inputs[start_idx:end_idx]))
            if start_idx == 0:
                output = _out
            else:
                output = torch.cat((output, _out))
            start_idx = end_idx
        return self.forward_head(output)


def distributed_sinkhorn(Q, nmb_iters, world_size=1):
    with torch.no_grad():
        sum_Q = torch.sum(Q)
        # dist.all_reduce(sum_Q) -- single process here
        Q /= sum_Q
        r = torch.ones(Q.shape[0]) / Q.shape[0]
        c = torch.ones(Q.shape[1]) / (world_size * Q.shape[1])
        curr_sum = torch.sum(Q, dim=1)
        for it in range(nmb_iters):
            u = curr_sum
            Q *= (r / u).unsqueeze(1)
            Q *= (c / torch.sum(Q, dim=0)).unsqueeze(0)
            curr_sum = torch.sum(Q, dim=1)
        return (Q / torch.sum(Q, dim=0, keepdim=True)).t().float()


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    nmb_crops, crops_for_assign = [2, 2], [0, 1]
    temperature, epsilon, sinkhorn_iterations = 0.1, 0.05, 3
    feat_dim, bs, niter_per_ep, epochs = 8, 4, 3, 2
    queue_length, epoch_queue_starts, freeze_prototypes_niters = 8, 1, 2
    base_lr, final_lr, start_warmup, warmup_epochs, wd = 0.6, 0.0006, 0.0, 1, 1e-6

    model = ResNet(output_dim=feat_dim, hidden_mlp=16, nmb_prototypes=10)
    optimizer = torch.optim.SGD(model.parameters(), lr=base_lr, momentum=0.9, weight_decay=wd)
    optimizer = LARC(optimizer=optimizer, trust_coefficient=0.001, clip=False)
    n_warm = niter_per_ep * warmup_epochs
    warmup_lr_schedule = [start_warmup + (base_lr - start_warmup) * i / (n_warm - 1) for i in range(n_warm)]
    n_cos = niter_per_ep * (epochs - warmup_epochs)
    cosine_lr_schedule = [final_lr + 0.5 * (base_lr - final_lr) * (1 + math.cos(math.pi * t / n_cos))
                          for t in range(n_cos)]
    lr_schedule = warmup_lr_schedule + cosine_lr_schedule
    queue_length -= queue_length % bs  # the queue needs to be divisible by the batch size

    softmax = nn.Softmax(dim=1)
    model.train()
    queue = None
    step = 0
    for epoch in range(epochs):
        # optionally starts a queue
        if queue_length > 0 and epoch >= epoch_queue_starts and queue is None:
            queue = torch.zeros(len(crops_for_assign), queue_length, feat_dim)
        use_the_queue = False
        for it in range(niter_per_ep):
            iteration = epoch * niter_per_ep + it
            for param_group in optimizer.param_groups:
                param_group["lr"] = lr_schedule[iteration]

            # normalize the prototypes
            with torch.no_grad():
                w = model.prototypes.weight.data.clone()
                w = nn.functional.normalize(w, dim=1, p=2)
                model.prototypes.weight.copy_(w)

            base = torch.randn(bs, 3, 12, 12)
            inputs = [base + 0.1 * torch.randn_like(base), torch.flip(base, dims=[3])]
            inputs += [base[:, :, 3:9, 3:9] + 0.1 * torch.randn(bs, 3, 6, 6) for _ in range(nmb_crops[1])]

            # ============ multi-res forward passes ... ============
            embedding, output = model(inputs)
            embedding = embedding.detach()

            # ============ swav loss ... ============
            loss = 0
            for i, crop_id in enumerate(crops_for_assign):
                with torch.no_grad():
                    out = output[bs * crop_id: bs * (crop_id + 1)]
                    # time to use the queue
                    if queue is not None:
                        if use_the_queue or not torch.all(queue[i, -1, :] == 0):
                            use_the_queue = True
                            out = torch.cat((torch.mm(queue[i], model.prototypes.weight.t()), out))
                        # fill the queue
                        queue[i, bs:] = queue[i, :-bs].clone()
                        queue[i, :bs] = embedding[crop_id * bs: (crop_id + 1) * bs]
                    # get assignments
                    q = torch.exp(out / epsilon).t()
                    q = distributed_sinkhorn(q, sinkhorn_iterations)[-bs:]

                # cluster assignment prediction
                subloss = 0
                for v in [c for c in range(sum(nmb_crops)) if c != crop_id]:
                    p = softmax(output[bs * v: bs * (v + 1)] / temperature)
                    subloss -= torch.mean(torch.sum(q * torch.log(p), dim=1))
                loss += subloss / (sum(nmb_crops) - 1)
            loss /= len(crops_for_assign)

            # ============ backward and optim step ... ============
            optimizer.zero_grad()
            loss.backward()
            # cancel some gradients
            if iteration < freeze_prototypes_niters:
                for name, p in model.named_parameters():
                    if "prototypes" in name:
                        p.grad = None
            optimizer.step()
            print(f"step {step} loss {loss.item():.6f}")
            step += 1
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"model": model.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
