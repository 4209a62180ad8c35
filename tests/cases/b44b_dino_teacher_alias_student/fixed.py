import copy
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class DINOHead(nn.Module):
    def __init__(self, in_dim, out_dim=64, hidden=32):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(in_dim, hidden), nn.GELU(), nn.Linear(hidden, hidden))
        self.last_layer = nn.Linear(hidden, out_dim, bias=False)

    def forward(self, x):
        x = F.normalize(self.mlp(x), dim=-1)
        return self.last_layer(x)


class DINOLoss(nn.Module):
    def __init__(self, out_dim, student_temp=0.1, teacher_temp=0.04, center_momentum=0.9):
        super().__init__()
        self.student_temp, self.teacher_temp, self.center_momentum = student_temp, teacher_temp, center_momentum
        self.register_buffer("center", torch.zeros(1, out_dim))

    def forward(self, student_output, teacher_output):
        s = F.log_softmax(student_output / self.student_temp, dim=-1)
        t = F.softmax((teacher_output - self.center) / self.teacher_temp, dim=-1).detach()
        loss = torch.sum(-t * s, dim=-1).mean()
        self.update_center(teacher_output)
        return loss

    @torch.no_grad()
    def update_center(self, teacher_output):
        batch_center = teacher_output.mean(dim=0, keepdim=True)
        self.center = self.center * self.center_momentum + batch_center * (1 - self.center_momentum)


def deactivate_requires_grad(model):
    for p in model.parameters():
        p.requires_grad = False


class DiNO(nn.Module):
    def __init__(self, encoder, embed_dim=16, out_dim=64):
        super().__init__()
        self.student_backbone = encoder
        self.student_head = DINOHead(embed_dim, out_dim)
        self.teacher_backbone = copy.deepcopy(encoder)
        self.teacher_head = copy.deepcopy(self.student_head)
        deactivate_requires_grad(self.teacher_backbone)
        deactivate_requires_grad(self.teacher_head)
        self.criterion = DINOLoss(out_dim)

    def forward_student(self, x):
        return self.student_head(self.student_backbone(x))

    def forward_teacher(self, x):
        return self.teacher_head(self.teacher_backbone(x))

    @torch.no_grad()
    def momentum_update(self, m):
        for ps, pt in zip(self.student_backbone.parameters(), self.teacher_backbone.parameters()):
            pt.data.mul_(m).add_((1 - m) * ps.detach().data)
        for ps, pt in zip(self.student_head.parameters(), self.teacher_head.parameters()):
            pt.data.mul_(m).add_((1 - m) * ps.detach().data)

    def training_step(self, views):
        teacher_out = self.forward_teacher(views[0])
        student_out = self.forward_student(views[1])
        return self.criterion(student_out, teacher_out)


encoder = nn.Sequential(nn.Linear(32, 24), nn.ReLU(), nn.Linear(24, 16))
model = DiNO(encoder)
params = [p for p in model.parameters() if p.requires_grad]
opt = torch.optim.SGD(params, lr=0.1)

x = torch.randn(8, 32)
views = [x + 0.1 * torch.randn_like(x), x + 0.1 * torch.randn_like(x)]
for step in range(3):
    loss = model.training_step(views)
    opt.zero_grad()
    loss.backward()
    opt.step()
    model.momentum_update(0.996)

print("loss", loss.item())
print("student backbone grad:", model.student_backbone[0].weight.grad)
