# Shape of modelscope/3D-Speaker#191 (speakerlab/bin/train_sdpn.py): SDPN self-distillation with
# learnable prototypes. The prototypes are a loose leaf made next to the student/teacher pair and
# handed to the SDPN loss every step; they get a gradient, but the optimizer is built from the
# student's parameter groups only, so they stay at their random init for the whole run.
import math
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = "cpu"  # the repo calls .cuda()
num_proto, output_dim, feat_dim = 8, 16, 24
base_lr, min_lr, epochs, iters = 0.2, 1e-3, 2, 3


class Encoder(nn.Module):  # ECAPA/ResNet backbone + projection head stand-in
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(40, feat_dim), nn.ReLU())
        self.head = nn.Sequential(nn.Linear(feat_dim, 32), nn.GELU(), nn.Linear(32, output_dim))

    def forward(self, x):
        h = self.backbone(x.mean(-1))
        return h, self.head(h)


def get_params_groups(model):  # utils_rdino.get_params_groups
    regularized, not_regularized = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        (not_regularized if name.endswith(".bias") or len(param.shape) == 1 else regularized).append(param)
    return [{"params": regularized}, {"params": not_regularized, "weight_decay": 0.0}]


def cosine_scheduler(base_value, final_value, epochs, niter_per_ep):
    iters_ = np.arange(epochs * niter_per_ep)
    return final_value + 0.5 * (base_value - final_value) * (1 + np.cos(np.pi * iters_ / len(iters_)))


class SDPNLoss(nn.Module):  # prototype assignment + me-max, as in the repo's sdpn_loss
    def __init__(self, tau=0.1, T=0.25):
        super().__init__()
        self.tau, self.T = tau, T

    def forward(self, anchor_views, target_views, prototypes, proto_labels):
        def snn(query, supports):
            query, supports = F.normalize(query), F.normalize(supports)
            return F.softmax(query @ supports.T / self.tau, dim=1) @ proto_labels
        probs = snn(anchor_views, prototypes)
        with torch.no_grad():
            targets = snn(target_views, prototypes) ** (1.0 / self.T)
            targets = targets / targets.sum(dim=1, keepdim=True)
        targets = targets.repeat(anchor_views.shape[0] // target_views.shape[0], 1)
        ploss = torch.mean(torch.sum(torch.log(probs ** (-targets)), dim=1))
        avg_probs = probs.mean(dim=0)
        me_max = -torch.sum(torch.log(avg_probs ** (-avg_probs))) + math.log(float(len(avg_probs)))
        return ploss, me_max


student, teacher = Encoder().to(device), Encoder().to(device)
teacher.load_state_dict(student.state_dict())
for p in teacher.parameters():
    p.requires_grad = False

# Make prototypes
with torch.no_grad():
    prototypes = torch.empty(num_proto, output_dim)
    _sqrt_k = (1.0 / output_dim) ** 0.5
    torch.nn.init.uniform_(prototypes, -_sqrt_k, _sqrt_k)
    prototypes = torch.nn.parameter.Parameter(prototypes).to(device)
    proto_labels = F.one_hot(torch.arange(num_proto), num_proto).float().to(device)
prototypes.requires_grad = True

sdpn_loss = SDPNLoss()
params_groups = get_params_groups(student)
optimizer = torch.optim.SGD(params_groups, lr=0, momentum=0.9)
if prototypes is not None:
    optimizer.add_param_group({'params': prototypes, 'weight_decay': 0, 'lr': base_lr})
lr_schedule = cosine_scheduler(base_lr, min_lr, epochs, iters)
momentum_schedule = cosine_scheduler(0.996, 1.0, epochs, iters)

protos0 = prototypes.detach().clone()
for epoch in range(epochs):
    for it in range(iters):
        it = iters * epoch + it
        for param_group in optimizer.param_groups:
            param_group["lr"] = lr_schedule[it]
        glb = torch.randn(4, 40, 20)
        local = torch.cat([glb[:, :, :10], glb[:, :, 10:]], 0) + 0.1 * torch.randn(8, 40, 10)
        _, target_views = teacher(glb)
        _, anchor_views = student(local)
        ploss, me_max = sdpn_loss(anchor_views, target_views, prototypes, proto_labels)
        loss = ploss + 1.0 * me_max
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        with torch.no_grad():  # EMA update for the teacher
            m = momentum_schedule[it]
            for param_q, param_k in zip(student.parameters(), teacher.parameters()):
                param_k.data.mul_(m).add_((1 - m) * param_q.detach().data)
    print("epoch", epoch, "loss", round(loss.item(), 4))

print("prototypes grad norm:", prototypes.grad.norm().item())
print("prototypes changed:", not torch.equal(protos0, prototypes.detach()))
