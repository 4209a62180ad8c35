"""huangzongmou/yolov8_Distillation, https://github.com/huangzongmou/yolov8_Distillation/issues/5
Seen: the 1x1 align convolutions of FeatureLoss (which map student channels to teacher channels) stay at their
random init, so distillation gives poor results. Why: Distillation_loss is a plain class holding FeatureLoss; the
trainer builds its optimizer from the student model only, so align_module's weights get gradients every step but
are in no optimizer.
Fix: add the loss module's parameters to the optimizer (model params + distill_loss.D_loss_fn.parameters()).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class CWDLoss(nn.Module):
    def __init__(self, tau=1.0):
        super().__init__()
        self.tau = tau

    def forward(self, y_s, y_t):
        losses = []
        for s, t in zip(y_s, y_t):
            N, C, H, W = s.shape
            p_t = F.softmax(t.view(-1, W * H) / self.tau, dim=1)
            cost = torch.sum(p_t * F.log_softmax(t.view(-1, W * H) / self.tau, 1)
                             - p_t * F.log_softmax(s.view(-1, W * H) / self.tau, 1)) * self.tau ** 2
            losses.append(cost / (C * N))
        return sum(losses)


class FeatureLoss(nn.Module):
    def __init__(self, channels_s, channels_t):
        super().__init__()
        self.align_module = nn.ModuleList([nn.Conv2d(c, tc, 1) for c, tc in zip(channels_s, channels_t)])
        self.feature_loss = CWDLoss()

    def forward(self, y_s, y_t):
        return self.feature_loss([self.align_module[i](s) for i, s in enumerate(y_s)], y_t)


class Distillation_loss:  # plain object, not an nn.Module
    def __init__(self, channels_s, channels_t):
        self.D_loss_fn = FeatureLoss(channels_s=channels_s, channels_t=channels_t)

    def get_loss(self, stu_feats, tea_feats):
        return self.D_loss_fn(y_s=stu_feats, y_t=tea_feats)


student = nn.Conv2d(3, 4, 3, padding=1)
teacher = nn.Conv2d(3, 8, 3, padding=1).eval()
for p in teacher.parameters():
    p.requires_grad_(False)
distill_loss = Distillation_loss(channels_s=[4], channels_t=[8])
optimizer = torch.optim.Adam(student.parameters(), lr=1e-2)  # <- optimizer

w0 = distill_loss.D_loss_fn.align_module[0].weight.detach().clone()
for step in range(5):
    img = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        t_feat = teacher(img)
    s_feat = student(img)
    loss = s_feat.pow(2).mean() * 0.1 + distill_loss.get_loss([s_feat], [t_feat])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
w = distill_loss.D_loss_fn.align_module[0].weight
print("align conv grad is None:", w.grad is None)
print("align conv changed:", not torch.equal(w0, w.detach()))
