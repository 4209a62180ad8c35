"""MeanTeacher in USB (microsoft/Semi-supervised-learning#102): the student's logits on the strong view are taken
from the teacher's weak-view output by a typo, so the consistency loss compares the teacher with itself: it is 0
at every step, carries no gradient, and the unlabelled data never trains the student."""
import copy

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
ema_model = copy.deepcopy(model).requires_grad_(False)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x_lb, y_lb = torch.randn(8, 10), torch.randint(0, 3, (8,))
x_ulb = torch.randn(64, 10)
for step in range(40):
    x_ulb_w, x_ulb_s = x_ulb + 0.05 * torch.randn_like(x_ulb), x_ulb + 0.5 * torch.randn_like(x_ulb)
    sup_loss = F.cross_entropy(model(x_lb), y_lb)
    with torch.no_grad():
        outs_x_ulb_w = ema_model(x_ulb_w)
    logits_x_ulb_s = outs_x_ulb_w  # <- cut_term
    unsup_loss = F.mse_loss(logits_x_ulb_s.softmax(-1), outs_x_ulb_w.softmax(-1))
    loss = sup_loss + 10.0 * unsup_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    with torch.no_grad():
        for p_ema, p in zip(ema_model.parameters(), model.parameters()):
            p_ema.mul_(0.9).add_(0.1 * p)
        gap = F.mse_loss(model(x_ulb_s).softmax(-1), ema_model(x_ulb_w).softmax(-1)).item()
    if step % 13 == 0 or step == 39:
        print(f"step {step}: unsup_loss {unsup_loss.item():.5f}, student/teacher gap {gap:.5f}")
