"""The fixed twin: the distillation term is computed from the student's scores with their history, so alpha
changes the update."""
import torch
import torch.nn.functional as F
from torch import nn


class ClsHead(nn.Module):
    def __init__(self, c=16, nc=4):
        super().__init__()
        self.cv3 = nn.Sequential(nn.Linear(c, 32), nn.SiLU(), nn.Linear(32, nc))

    def forward(self, feats):
        return self.cv3(feats)


def cls_loss(pred_scores, target_scores, current_teacher_scores, alpha):
    bce = nn.BCEWithLogitsLoss(reduction="none")
    target_scores_sum = max(target_scores.sum(), 1)
    pred_scores_student = torch.sigmoid(pred_scores)
    loss_distillation = F.binary_cross_entropy(pred_scores_student, current_teacher_scores, reduction="sum")
    loss_student = bce(pred_scores, target_scores).sum() / target_scores_sum
    return alpha * loss_distillation + 0.3 * loss_student


torch.manual_seed(0)
teacher = ClsHead().requires_grad_(False)
feats = torch.randn(32, 16)
target_scores = (torch.rand(32, 4) > 0.7).float()
with torch.no_grad():
    current_teacher_scores = torch.sigmoid(teacher(feats))
trained = {}
for alpha in (0.0, 5.0):
    torch.manual_seed(1)
    student = ClsHead()
    optimizer = torch.optim.SGD(student.parameters(), lr=1e-2)
    for step in range(3):
        loss = cls_loss(student(feats), target_scores, current_teacher_scores, alpha)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    trained[alpha] = student.cv3[2].weight.detach().clone()
    print(f"alpha {alpha}: loss {loss.item():.3f}")
print("alpha changes the trained student:", not torch.equal(trained[0.0], trained[5.0]))
