"""DINO self-distillation, reduced from facebookresearch/dino (main_dino.py, utils.py,
vision_transformer.py DINOHead; https://github.com/facebookresearch/dino). A student
(backbone + DINOHead) learns with AdamW; the teacher is a separately built network of the same shape
that receives the student's weights through load_state_dict, has requires_grad=False on every
parameter, is not in the optimizer, and is moved only by the EMA
param_k.data.mul_(m).add_((1 - m) * param_q.detach().data) under torch.no_grad.

Suspicious-but-correct patterns kept: the DINOHead last layer is nn.utils.weight_norm with weight_g
filled with 1 through .data and frozen (norm_last_layer=True), so get_params_groups skips it
(requires_grad False) and it never changes, while weight_v learns; cancel_gradients_last_layer sets
p.grad = None for the last layer during the first epoch (freeze_last_layer=1), so weight_v gets no
update in epoch 0 and learns from epoch 1 on (2 epochs x 3 iterations here); clip_gradients
rescales p.grad.data in place and logs param_norm.item(); the DINOLoss center is a registered buffer
re-assigned (EMA) under @torch.no_grad, and the teacher softmax is .detach()ed; the teacher only sees
the two global crops while the student's MultiCropWrapper runs the backbone once per crop
resolution; biases and 1-d parameters go in a no-weight-decay param group; lr and weight decay are
set by hand from cosine schedules (lr is 0 at the first warmup iteration); the loss is checked with
math.isfinite(loss.item()).
"""
import math
import os
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

warnings.filterwarnings("ignore", category=FutureWarning)


def cosine_scheduler(base_value, final_value, epochs, niter_per_ep, warmup_epochs=0, start_warmup_value=0):
    """utils.cosine_scheduler (numpy in the original), as a plain list."""
    warmup_iters = warmup_epochs * niter_per_ep
    warmup = [start_warmup_value + (base_value - start_warmup_value) * i / max(warmup_iters - 1, 1)
              for i in range(warmup_iters)]
    n = epochs * niter_per_ep - warmup_iters
    cosine = [final_value + 0.5 * (base_value - final_value) * (1 + math.cos(math.pi * i / n)) for i in range(n)]
    return warmup + cosine


def clip_gradients(model, clip):
    norms = []
    for name, p in model.named_parameters():
        if p.grad is not None:
            param_norm = p.grad.data.norm(2)
            norms.append(param_norm.item())
            clip_coef = clip / (param_norm + 1e-6)
            if clip_coef < 1:
                p.grad.data.mul_(clip_coef)
    return norms


def cancel_gradients_last_layer(epoch, model, freeze_last_layer):
    if epoch >= freeze_last_layer:
        return
    for n, p in model.named_parameters():
        if "last_layer" in n:
            p.grad = None


def get_params_groups(model):
    regularized = []
    not_regularized = []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        # we do not regularize biases nor Norm parameters
        if name.endswith(".bias") or len(param.shape) == 1:
            not_regularized.append(param)
        else:
            regularized.append(param)
    return [{"params": regularized}, {"params": not_regularized, "weight_decay": 0.0}]


class TinyConvNet(nn.Module):
    """Stand-in for a torchvision resnet backbone (DINO supports torchvision archs): the fc is replaced
    by nn.Identity in MultiCropWrapper and the pooled features are the embedding."""

    def __init__(self, embed_dim=16):
        super().__init__()
        self.conv1 = nn.Conv2d(3, embed_dim, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(embed_dim)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(embed_dim, 10)

    def forward(self, x):
        x = self.avgpool(F.relu(self.bn1(self.conv1(x))))
        return self.fc(torch.flatten(x, 1))


class DINOHead(nn.Module):
    def __init__(self, in_dim, out_dim, use_bn=False, norm_last_layer=True, nlayers=3, hidden_dim=32,
                 bottleneck_dim=8):
        super().__init__()
        layers = [nn.Linear(in_dim, hidden_dim)]
        if use_bn:
            layers.append(nn.BatchNorm1d(hidden_dim))
        layers.append(nn.GELU())
        for _ in range(nlayers - 2):
            layers.append(nn.Linear(hidden_dim, hidden_dim))
            if use_bn:
                layers.append(nn.BatchNorm1d(hidden_dim))
            layers.append(nn.GELU())
        layers.append(nn.Linear(hidden_dim, bottleneck_dim))
        self.mlp = nn.Sequential(*layers)
        self.apply(self._init_weights)
        self.last_layer = nn.utils.weight_norm(nn.Linear(bottleneck_dim, out_dim, bias=False))
        self.last_layer.weight_g.data.fill_(1)
        if norm_last_layer:
            self.last_layer.weight_g.requires_grad = False

    def _init_weights(self, m):
        if isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.mlp(x)
        x = nn.functional.normalize(x, dim=-1, p=2)
        return self.last_layer(x)


class MultiCropWrapper(nn.Module):
    def __init__(self, backbone, head):
        super().__init__()
        backbone.fc, backbone.head = nn.Identity(), nn.Identity()
        self.backbone = backbone
        self.head = head

    def forward(self, x):
        if not isinstance(x, list):
            x = [x]
        idx_crops = torch.cumsum(torch.unique_consecutive(
            torch.tensor([inp.shape[-1] for inp in x]), return_counts=True)[1], 0)
        start_idx, output = 0, torch.empty(0).to(x[0].device)
        for end_idx in idx_crops:
            _out = self.backbone(torch.cat(x[start_idx:end_idx]))
            output = torch.cat((output, _out))
            start_idx = end_idx
        return self.head(output)


class DINOLoss(nn.Module):
    def __init__(self, out_dim, ncrops, warmup_teacher_temp, teacher_temp, warmup_teacher_temp_epochs,
                 nepochs, student_temp=0.1, center_momentum=0.9):
        super().__init__()
        self.student_temp = student_temp
        self.center_momentum = center_momentum
        self.ncrops = ncrops
        self.register_buffer("center", torch.zeros(1, out_dim))
        warm = [warmup_teacher_temp + (teacher_temp - warmup_teacher_temp) * i / max(warmup_teacher_temp_epochs - 1, 1)
                for i in range(warmup_teacher_temp_epochs)]
        self.teacher_temp_schedule = warm + [teacher_temp] * (nepochs - warmup_teacher_temp_epochs)

    def forward(self, student_output, teacher_output, epoch):
        student_out = student_output / self.student_temp
        student_out = student_out.chunk(self.ncrops)
        # teacher centering and sharpening
        temp = self.teacher_temp_schedule[epoch]
        teacher_out = F.softmax((teacher_output - self.center) / temp, dim=-1)
        teacher_out = teacher_out.detach().chunk(2)

        total_loss = 0
        n_loss_terms = 0
        for iq, q in enumerate(teacher_out):
            for v in range(len(student_out)):
                if v == iq:
                    continue  # skip cases where student and teacher operate on the same view
                loss = torch.sum(-q * F.log_softmax(student_out[v], dim=-1), dim=-1)
                total_loss += loss.mean()
                n_loss_terms += 1
        total_loss /= n_loss_terms
        self.update_center(teacher_output)
        return total_loss

    @torch.no_grad()
    def update_center(self, teacher_output):
        batch_center = torch.sum(teacher_output, dim=0, keepdim=True)
        # dist.all_reduce(batch_center) -- single process here
        batch_center = batch_center / len(teacher_output)
        self.center = self.center * self.center_momentum + batch_center * (1 - self.center_momentum)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    embed_dim, out_dim, local_crops_number = 16, 32, 2
    epochs, niter_per_ep, freeze_last_layer, clip_grad = 2, 3, 1, 3.0

    student = MultiCropWrapper(TinyConvNet(embed_dim), DINOHead(embed_dim, out_dim, norm_last_layer=True))
    teacher = MultiCropWrapper(TinyConvNet(embed_dim), DINOHead(embed_dim, out_dim))
    teacher_without_ddp = teacher
    # teacher and student start with the same weights
    teacher_without_ddp.load_state_dict(student.state_dict())
    # there is no backpropagation through the teacher, so no need for gradients
    for p in teacher.parameters():
        p.requires_grad = False

    dino_loss = DINOLoss(out_dim, local_crops_number + 2, 0.04, 0.04, 0, epochs)
    optimizer = torch.optim.AdamW(get_params_groups(student))
    lr_schedule = cosine_scheduler(5e-3, 1e-6, epochs, niter_per_ep, warmup_epochs=1)
    wd_schedule = cosine_scheduler(0.04, 0.4, epochs, niter_per_ep)
    momentum_schedule = cosine_scheduler(0.99, 1, epochs, niter_per_ep)

    step = 0
    for epoch in range(epochs):
        for it in range(niter_per_ep):
            it = niter_per_ep * epoch + it  # global training iteration
            for i, param_group in enumerate(optimizer.param_groups):
                param_group["lr"] = lr_schedule[it]
                if i == 0:  # only the first group is regularized
                    param_group["weight_decay"] = wd_schedule[it]

            base = torch.randn(4, 3, 12, 12)
            images = [base + 0.1 * torch.randn_like(base), torch.flip(base, dims=[3])]
            images += [base[:, :, :6, :6] + 0.1 * torch.randn(4, 3, 6, 6) for _ in range(local_crops_number)]

            teacher_output = teacher(images[:2])  # only the 2 global views pass through the teacher
            student_output = student(images)
            loss = dino_loss(student_output, teacher_output, epoch)
            if not math.isfinite(loss.item()):
                print("Loss is {}, stopping training".format(loss.item()))
                raise SystemExit(1)

            # student update
            optimizer.zero_grad()
            loss.backward()
            param_norms = clip_gradients(student, clip_grad)
            cancel_gradients_last_layer(epoch, student, freeze_last_layer)
            optimizer.step()

            # EMA update for the teacher
            with torch.no_grad():
                m = momentum_schedule[it]  # momentum parameter
                for param_q, param_k in zip(student.parameters(), teacher_without_ddp.parameters()):
                    param_k.data.mul_(m).add_((1 - m) * param_q.detach().data)

            print(f"step {step} loss {loss.item():.6f}")
            step += 1
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"student": student.state_dict(), "teacher": teacher.state_dict(),
                    "dino_loss": dino_loss.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
